package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // the s3:// FileIO only: no Azure or GCS SDK
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"sitewatch/pipeline/config"
)

var osGetenv = os.Getenv

// openCatalog opens the catalog of cfg.Catalog: postgres:// is the SQL catalog in that
// database (its tables are created when missing), http(s):// a REST catalog.
func openCatalog(ctx context.Context, cfg config.PublishConfig, getenv func(string) string) (catalog.Catalog, error) {
	if msg := config.CheckCatalogURL(cfg.Catalog); msg != "" {
		return nil, fmt.Errorf("publish.catalog: %s", msg)
	}
	u, _ := url.Parse(cfg.Catalog) // checked above
	secret := getenv(config.EnvCatalogPassword)
	props := fileIOProps(cfg)
	if strings.HasPrefix(strings.ToLower(u.Scheme), "postgres") {
		return openSQLCatalog(ctx, u, secret, props)
	}
	return openRESTCatalog(ctx, u, secret, props)
}

// fileIOProps are the S3 settings of the tables' FileIO, from the publish section; keys come
// from the standard AWS chain, as for the Hive layout.
func fileIOProps(cfg config.PublishConfig) iceberg.Properties {
	props := iceberg.Properties{iceio.S3ForceVirtualAddressing: strconv.FormatBool(!cfg.PathStyle)}
	if cfg.Region != "" {
		props[iceio.S3Region] = cfg.Region
	}
	if cfg.Endpoint != "" {
		props[iceio.S3EndpointURL] = cfg.Endpoint
	}
	return props
}

func openSQLCatalog(ctx context.Context, u *url.URL, password string, props iceberg.Properties) (catalog.Catalog, error) {
	where := u.Host + u.Path // never the password
	dsn := *u
	if password != "" {
		dsn.User = url.UserPassword(u.User.Username(), password)
	}
	db, err := openSQLDB(dsn.String()) // deadlines.go: connect, statement, lock and read bounds
	if err != nil {
		return nil, fmt.Errorf("iceberg: open the SQL catalog at %s: %w", where, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		if aerr := loginRefused(err, where, u.User.Username(), password); aerr != nil {
			return nil, aerr
		}
		return nil, fmt.Errorf("iceberg: connect to the SQL catalog at %s as %s: %w (check publish.catalog and %s)",
			where, u.User.Username(), scrub(err, password), config.EnvCatalogPassword)
	}
	cat, err := sqlcat.NewCatalog(CatalogName, db, sqlcat.Postgres, props)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("iceberg: prepare the SQL catalog tables at %s: %w", where, scrub(err, password))
	}
	return &ownedSQLCatalog{Catalog: cat, db: db}, nil
}

// loginRefused says in one line what a refused PostgreSQL login means, or returns nil for any
// other error: with SITEWATCH_CATALOG_PASSWORD unset, that the variable is missing (instead of
// the driver's report of each connection attempt, TLS included); set, that its password was
// refused.
func loginRefused(err error, where, user, password string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || (pgErr.Code != pgInvalidPassword && pgErr.Code != pgInvalidAuthorization) {
		return nil
	}
	if password == "" {
		return fmt.Errorf("iceberg: the SQL catalog at %s asks user %s for a password and %s is not set: export the password in it (never in domains.yaml), then rerun",
			where, user, config.EnvCatalogPassword)
	}
	return fmt.Errorf("iceberg: the SQL catalog at %s refused user %s with the password in %s (PostgreSQL %s): correct the variable, or the user in publish.catalog",
		where, user, config.EnvCatalogPassword, pgErr.Code)
}

// PostgreSQL's SQLSTATEs for a refused login.
const (
	pgInvalidPassword      = "28P01"
	pgInvalidAuthorization = "28000"
)

// ownedSQLCatalog closes the database handle NewCatalog was given (it leaves it open).
type ownedSQLCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

func (c *ownedSQLCatalog) Close() error {
	_ = c.Catalog.Close()
	return c.db.Close()
}

// openRESTCatalog opens a REST catalog; SITEWATCH_CATALOG_PASSWORD, when set, is its OAuth2
// client credential ("client_id:client_secret") or, without a colon, a bearer token.
func openRESTCatalog(ctx context.Context, u *url.URL, secret string, props iceberg.Properties) (catalog.Catalog, error) {
	tr := newRESTTransport() // deadlines.go
	opts := []rest.Option{rest.WithAdditionalProps(props), rest.WithCustomTransport(tr)}
	switch {
	case strings.Contains(secret, ":"):
		opts = append(opts, rest.WithCredential(secret))
	case secret != "":
		opts = append(opts, rest.WithOAuthToken(secret))
	}
	cat, err := rest.NewCatalog(ctx, CatalogName, u.String(), opts...)
	if err != nil {
		return nil, fmt.Errorf("iceberg: connect to the REST catalog %s: %w (check publish.catalog and %s)", u.Redacted(),
			withRefusal(scrub(err, secret), tr.lastRefusal()), config.EnvCatalogPassword)
	}
	return cat, nil
}

// withRefusal adds to err the catalog's last refused answer (URL and status) when err does not
// say it: the OAuth2 client reports a token endpoint's 404 with an empty cause
// (`Get "…/v1/config": `).
func withRefusal(err error, refused string) error {
	text := strings.TrimSpace(err.Error())
	if refused == "" || strings.Contains(text, "HTTP") {
		return err
	}
	if strings.HasSuffix(text, ":") || strings.HasSuffix(text, "oauth error") {
		return &causedError{err: err, msg: text + " " + refused}
	}
	return &causedError{err: err, msg: text + " (" + refused + ")"}
}

// causedError is err with a message that says its cause.
type causedError struct {
	err error
	msg string
}

func (e *causedError) Error() string { return e.msg }
func (e *causedError) Unwrap() error { return e.err }

// scrub removes secret from an error's text, should a driver ever echo it.
func scrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), secret, "[redacted]"))
}
