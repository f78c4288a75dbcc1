package warehouse

/*
#include <stdint.h>
#include <stdlib.h>

// The Arrow C data and stream interfaces (Arrow's abi.h, a stable ABI).
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
	const char *format;
	const char *name;
	const char *metadata;
	int64_t flags;
	int64_t n_children;
	struct ArrowSchema **children;
	struct ArrowSchema *dictionary;
	void (*release)(struct ArrowSchema *);
	void *private_data;
};
struct ArrowArray {
	int64_t length;
	int64_t null_count;
	int64_t offset;
	int64_t n_buffers;
	int64_t n_children;
	const void **buffers;
	struct ArrowArray **children;
	struct ArrowArray *dictionary;
	void (*release)(struct ArrowArray *);
	void *private_data;
};
#endif
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
	int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
	int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
	const char *(*get_last_error)(struct ArrowArrayStream *);
	void (*release)(struct ArrowArrayStream *);
	void *private_data;
};
#endif

// DuckDB's C API (duckdb.h): 0 is DuckDBSuccess. The connection is go-duckdb's.
extern int duckdb_arrow_scan(void *connection, const char *table_name, void *arrow);

// sw_view is the stream DuckDB scans: it forwards to inner (the Go reader arrow exported) and
// keeps a copy of every schema it hands out, which DuckDB 1.1.2 never releases.
typedef struct {
	struct ArrowArrayStream outer; // first: DuckDB's pointer is the view's
	struct ArrowArrayStream inner;
	struct ArrowSchema *schemas;
	int n, cap;
} sw_view;

static int sw_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
	sw_view *v = (sw_view *)s->private_data;
	int rc = v->inner.get_schema(&v->inner, out);
	if (rc != 0 || out->release == NULL) {
		return rc;
	}
	if (v->n == v->cap) {
		int cap = v->cap ? 2 * v->cap : 4;
		struct ArrowSchema *grown = realloc(v->schemas, cap * sizeof *grown);
		if (grown == NULL) {
			return rc; // untracked: it leaks, as every schema did before
		}
		v->schemas = grown;
		v->cap = cap;
	}
	v->schemas[v->n++] = *out;
	return rc;
}

static int sw_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
	sw_view *v = (sw_view *)s->private_data;
	return v->inner.get_next(&v->inner, out);
}

static const char *sw_get_last_error(struct ArrowArrayStream *s) {
	sw_view *v = (sw_view *)s->private_data;
	return v->inner.get_last_error(&v->inner);
}

// DuckDB 1.1.2 never calls it (go-duckdb issue 437); sw_view_free does the work.
static void sw_release(struct ArrowArrayStream *s) { s->release = NULL; }

static sw_view *sw_view_new(void) {
	sw_view *v = calloc(1, sizeof *v);
	if (v != NULL) {
		v->outer.get_schema = sw_get_schema;
		v->outer.get_next = sw_get_next;
		v->outer.get_last_error = sw_get_last_error;
		v->outer.release = sw_release;
		v->outer.private_data = v;
	}
	return v;
}

static int sw_view_scan(void *connection, const char *name, sw_view *v) {
	return duckdb_arrow_scan(connection, name, &v->outer);
}

// sw_view_free releases every schema handed to DuckDB and the inner stream (the Go reader),
// and frees v. It returns how many schemas it released.
static int sw_view_free(sw_view *v) {
	int n = v->n;
	for (int i = 0; i < v->n; i++) {
		if (v->schemas[i].release != NULL) {
			v->schemas[i].release(&v->schemas[i]);
		}
	}
	if (v->inner.release != NULL) {
		v->inner.release(&v->inner);
	}
	free(v->schemas);
	free(v);
	return n;
}
*/
import "C"

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/cdata"
)

// arrowView is a record stream registered with DuckDB as a view, registered and freed here
// instead of by go-duckdb's Arrow.RegisterView, which leaks twice per registration: DuckDB
// 1.1.2 never releases the Arrow schemas it asks the stream for (its C API nulls their release
// and leaves them "to the caller", who never sees them: ~6 KB of C memory, at least two per
// registration), and go-duckdb frees the stream without releasing it, so the Go reader stays
// referenced by a cgo handle for good. A run registers a view per table per commit, ~45,000 at
// a million domains: the run's memory grew by ~200 MB through its fetch
// (docs/warehouse-internals.md, "Arrow views").
type arrowView struct {
	v *C.sw_view
}

// registerArrowView registers rdr as the view name on the DuckDB connection con (duckdbConn).
// The caller drops the view, then calls release.
func registerArrowView(con unsafe.Pointer, rdr array.RecordReader, name string) (*arrowView, error) {
	v := C.sw_view_new()
	if v == nil {
		return nil, errors.New("register Arrow view: out of memory")
	}
	cdata.ExportRecordReader(rdr, (*cdata.CArrowArrayStream)(unsafe.Pointer(&v.inner)))
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	if C.sw_view_scan(con, cName, v) != 0 {
		C.sw_view_free(v)
		return nil, fmt.Errorf("register Arrow view %s: duckdb_arrow_scan failed", name)
	}
	return &arrowView{v: v}, nil
}

// release frees what DuckDB took from the stream (its schemas) and the stream itself, and
// returns how many schemas it released. Call it once, after the view is dropped: the other
// order leaves DuckDB holding freed memory.
func (a *arrowView) release() int {
	n := int(C.sw_view_free(a.v))
	a.v = nil
	return n
}

// duckdbConn returns go-duckdb's C connection handle (its conn's duckdbCon field), which the
// driver does not export. go.mod pins go-duckdb v1.8.2; a version that renames or retypes the
// field makes Open fail with this error rather than misread memory.
func duckdbConn(dc driver.Conn) (unsafe.Pointer, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("go-duckdb's connection is %T, not a pointer to its conn struct", dc)
	}
	f := v.Elem().FieldByName("duckdbCon")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("go-duckdb's connection %T has no duckdbCon C pointer (a go-duckdb other than v1.8.2?)", dc)
	}
	con := *(*unsafe.Pointer)(unsafe.Pointer(f.UnsafeAddr()))
	if con == nil {
		return nil, errors.New("go-duckdb's connection is closed")
	}
	return con, nil
}
