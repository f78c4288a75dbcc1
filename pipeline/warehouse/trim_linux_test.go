//go:build linux && cgo

package warehouse

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestReleasesArePaced checks trim_linux.c's pacing: within the interval after a release only
// a forced one goes through (jemalloc purged, glibc trimmed), a warehouse's release included;
// after the interval the next one does.
func TestReleasesArePaced(t *testing.T) {
	defer setTrimInterval(setTrimInterval(time.Hour))
	w := testWarehouse(t, "")
	releaseNativeMemory(true) // the interval starts now
	asked, run, purged := releaseCounts()

	w.releaseNative()
	releaseNativeMemory(false)
	if a, r, p := releaseCounts(); a != asked+2 || r != run || p != purged {
		t.Fatalf("two releases within the interval: asked +%d, run +%d, purged +%d; want +2, +0, +0", a-asked, r-run, p-purged)
	}
	releaseNativeMemory(true)
	if _, r, p := releaseCounts(); r != run+1 || p != purged+1 {
		t.Fatalf("a forced release: run +%d, purged +%d; want +1, +1", r-run, p-purged)
	}

	setTrimInterval(0)
	w.releaseNative()
	if _, r, _ := releaseCounts(); r != run+2 {
		t.Fatalf("a release after the interval went through %d times; want 1", r-run-1)
	}
}

// TestDuckDBTrimsArePaced checks that DuckDB's own malloc_trim calls reach the pacing (it is
// the one DuckDB's static library links to): in a fresh process (this test binary again),
// DuckDB 1.1 trims when it starts a database's threads.
func TestDuckDBTrimsArePaced(t *testing.T) {
	if os.Getenv("SITEWATCH_TRIM_CHILD") == "1" {
		setTrimInterval(time.Hour)
		releaseNativeMemory(true)
		asked, run, _ := releaseCounts()
		db, err := sql.Open("duckdb", "")
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		a, r, _ := releaseCounts()
		fmt.Printf("asked %d run %d err %v\n", a-asked, r-run, err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDuckDBTrimsArePaced$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "SITEWATCH_TRIM_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child test process: %v\n%s", err, out)
	}
	var asked, run int
	var openErr string
	if _, err := fmt.Sscanf(string(out), "asked %d run %d err %s", &asked, &run, &openErr); err != nil {
		t.Fatalf("reading the child's counts: %v\n%s", err, out)
	}
	if openErr != "<nil>" {
		t.Fatalf("the child could not open DuckDB: %s", out)
	}
	if asked == 0 {
		t.Fatal("DuckDB's open of a database did not reach this process's malloc_trim; want its calls paced too")
	}
	if run != 0 {
		t.Fatalf("%d of DuckDB's trims went through to glibc's within the interval; want 0", run)
	}
}
