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

// TestMallocTrimIsPaced checks trim_linux.c's malloc_trim: within the interval after a trim
// only a forced release (a warehouse's close) goes through to glibc's, and after it the next
// call does.
func TestMallocTrimIsPaced(t *testing.T) {
	defer setTrimInterval(setTrimInterval(time.Hour))
	releaseNativeMemory(true) // the interval starts now
	asked, run := trimCounts()

	releaseNativeMemory(false)
	if a, r := trimCounts(); a != asked+1 || r != run {
		t.Fatalf("a release within the interval: asked +%d, run +%d; want +1, +0", a-asked, r-run)
	}
	releaseNativeMemory(true)
	if _, r := trimCounts(); r != run+1 {
		t.Fatalf("a forced release ran glibc's malloc_trim %d times; want 1", r-run)
	}

	setTrimInterval(0)
	releaseNativeMemory(false)
	if _, r := trimCounts(); r != run+2 {
		t.Fatalf("a release after the interval ran glibc's malloc_trim %d times; want 1", r-run-1)
	}
}

// TestDuckDBTrimsArePaced checks that DuckDB's own malloc_trim calls reach the pacing (it is
// the one DuckDB's static library links to): in a fresh process (this test binary again),
// DuckDB 1.1 trims when it starts a database's threads.
func TestDuckDBTrimsArePaced(t *testing.T) {
	if os.Getenv("SITEWATCH_TRIM_CHILD") == "1" {
		setTrimInterval(time.Hour)
		releaseNativeMemory(true)
		asked, run := trimCounts()
		db, err := sql.Open("duckdb", "")
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		a, r := trimCounts()
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
