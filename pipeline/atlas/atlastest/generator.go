package atlastest

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Generator produces the deterministic synthetic bodies of the simulator. The same seed,
// month and domain always give the same bytes. A Generator is safe for concurrent use; it
// caches encoded bodies in a bounded map so repeated requests cost a copy, not an encoding.
type Generator struct {
	seed  int64
	month time.Time // first day of the snapshot month, UTC

	mu    sync.RWMutex
	cache map[cacheKey]cachedBody

	countriesOnce sync.Once
	countries     []byte

	poolsOnce sync.Once
	pools     map[string][]string // category slug -> similar-site candidates
	poolOf    map[string]category // synthetic pool domain -> its category
}

type cacheKey struct {
	endpoint string
	domain   string
}

// cachedBody is a 200 body split around the echoed meta.request.url string, so one cached
// encoding serves every spelling of the requested url.
type cachedBody struct {
	head, tail []byte
}

// maxCache bounds the body cache; when full it is cleared (cheap and good enough for a
// simulator whose working set is a watchlist).
const maxCache = 16384

// NewGenerator returns a Generator for seed and month (YYYY-MM). An empty or malformed month
// means the current UTC month; a zero seed means 1.
func NewGenerator(seed int64, month string) *Generator {
	if seed == 0 {
		seed = 1
	}
	m, err := parseMonth(month)
	if err != nil {
		now := time.Now().UTC()
		m = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return &Generator{seed: seed, month: m, cache: make(map[cacheKey]cachedBody)}
}

func parseMonth(s string) (time.Time, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("month %q: want YYYY-MM: %w", s, err)
	}
	return t.UTC(), nil
}

// Month returns the snapshot month the Generator describes, as YYYY-MM.
func (g *Generator) Month() string { return g.month.Format("2006-01") }

// OverviewBody returns the site overview body (spec 2.1) for domain, which is used as given
// (the caller normalizes it) and echoed as meta.request.url.
func (g *Generator) OverviewBody(domain string) []byte {
	return g.body("site-overview", domain, domain)
}

// SimilarBody returns the similar-sites body (spec 2.2) for domain, echoed as meta.request.url.
func (g *Generator) SimilarBody(domain string) []byte {
	return g.body("site-similar", domain, domain)
}

// CountriesBody returns the country metadata body (spec 2.3): the 249 ISO 3166-1 entries.
func (g *Generator) CountriesBody() []byte {
	g.countriesOnce.Do(func() {
		g.countries = mustMarshal(countriesBody{
			Status:    "success",
			Meta:      countriesMeta{Count: len(isoCountries()), Standard: "ISO 3166-1"},
			Countries: isoCountries(),
		})
	})
	return g.countries
}

// body returns the encoded body of endpoint for the normalized domain with requestURL echoed.
func (g *Generator) body(endpoint, domain, requestURL string) []byte {
	k := cacheKey{endpoint, domain}
	g.mu.RLock()
	c, ok := g.cache[k]
	g.mu.RUnlock()
	if !ok {
		c = g.encode(endpoint, domain)
		g.mu.Lock()
		if len(g.cache) >= maxCache {
			clear(g.cache)
		}
		g.cache[k] = c
		g.mu.Unlock()
	}
	u := jsonString(requestURL)
	out := make([]byte, 0, len(c.head)+len(u)+len(c.tail))
	out = append(out, c.head...)
	out = append(out, u...)
	return append(out, c.tail...)
}

// echoMarker is a placeholder url that cannot occur in generated data; the encoded body is
// split around it.
const echoMarker = "\x00echo\x00"

func (g *Generator) encode(endpoint, domain string) cachedBody {
	var v any
	switch endpoint {
	case "site-overview":
		v = g.overview(domain, echoMarker)
	case "site-similar":
		v = g.similar(domain, echoMarker)
	default:
		panic("atlastest: unknown endpoint " + endpoint)
	}
	b := mustMarshal(v)
	m := jsonString(echoMarker)
	i := bytes.Index(b, m)
	return cachedBody{head: b[:i:i], tail: b[i+len(m):]}
}

// jsonString encodes s as a JSON string exactly as json.Marshal does, without reflection for
// the common case of plain printable ASCII.
func jsonString(s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return b
}

// mustMarshal encodes v compactly without HTML escaping (category names contain " > ").
func mustMarshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("atlastest: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// rng returns a generator seeded from the Generator's seed and the given parts.
func (g *Generator) rng(parts ...string) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(g.seed))
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// Domains returns n distinct, valid, deterministic synthetic domains (lower case, already
// normalized). Domains(n)[i] does not depend on n.
func Domains(n int) []string {
	out := make([]string, 0, n)
	seen := make(map[string]bool, n)
	for i := 0; len(out) < n; i++ {
		a, b := wordsAdj[i%len(wordsAdj)], wordsNoun[(i/len(wordsAdj))%len(wordsNoun)]
		name := a + b
		if k := i / (len(wordsAdj) * len(wordsNoun)); k > 0 {
			name += strconv.Itoa(k)
		}
		d := name + "." + tlds[(i*7+i/3)%len(tlds)]
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// promptFor is the prompt template number k (mod the templates) filled for s: consecutive k
// give distinct prompts, as a real top-prompts list has no repeats.
func promptFor(s profile, k int) string {
	t := promptTemplates[k%len(promptTemplates)]
	t = strings.ReplaceAll(t, "{domain}", s.domain)
	t = strings.ReplaceAll(t, "{topic}", strings.ToLower(s.category.leaf()))
	return t
}

func round(x float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(x*p) / p
}

func ptr[T any](v T) *T { return &v }

func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if w == "and" && i > 0 {
			continue
		}
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// topCountries are weighted picks for top countries of synthetic sites.
var topCountries = []struct {
	code   string
	weight float64
}{
	{"US", 30}, {"IN", 8}, {"GB", 6}, {"DE", 6}, {"BR", 5}, {"FR", 4}, {"JP", 4}, {"CA", 3},
	{"RU", 3}, {"ES", 3}, {"IT", 3}, {"MX", 2}, {"ID", 2}, {"NL", 2}, {"AU", 2}, {"KR", 2},
	{"PL", 2}, {"TR", 2}, {"VN", 1}, {"PH", 1}, {"SE", 1}, {"CH", 1}, {"AR", 1}, {"NG", 1},
}

var topCountriesTotal = func() float64 {
	var t float64
	for _, c := range topCountries {
		t += c.weight
	}
	return t
}()

func pickCountry(r *rand.Rand) string {
	x := r.Float64() * topCountriesTotal
	for _, c := range topCountries {
		x -= c.weight
		if x < 0 {
			return c.code
		}
	}
	return "US"
}
