package buildinfo

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"sitewatch/internal/testenv"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for name, tt := range map[string]struct {
		bi   debug.BuildInfo
		want string
	}{
		"ModuleVersion":   {debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs("f03e3ef8a1b2c3d4", "true")}, "v1.4.0"},
		"PseudoVersion":   {debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125142800-f03e3ef8a1b2+dirty"}}, "v0.0.0-20261125142800-f03e3ef8a1b2+dirty"},
		"DevelWithVCS":    {debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("f03e3ef8a1b2c3d4e5f6", "false")}, "f03e3ef8a1b2"},
		"DirtyWorkTree":   {debug.BuildInfo{Main: debug.Module{Version: ""}, Settings: vcs("f03e3ef8a1b2c3d4e5f6", "true")}, "f03e3ef8a1b2-dirty"},
		"NothingAtAll":    {debug.BuildInfo{}, "(devel)"},
		"DevelWithoutVCS": {debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fromBuildInfo(&tt.bi); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionNeverEmpty(t *testing.T) {
	if Version() == "" {
		t.Error("Version() is empty")
	}
}

// TestStampedVersionWins: the version `make build` stamps is the one every output names.
func TestStampedVersionWins(t *testing.T) {
	defer func(old string) { stamped = old }(stamped)
	stamped = "v1.4.0-3-gf03e3ef-dirty"
	if got := Version(); got != stamped {
		t.Errorf("Version() = %q, want the stamped %q", got, stamped)
	}
}

// TestMakeBuildStampsTheVersion: `make build` passes `git describe --always --dirty` to the
// linker as buildinfo.stamped, so a build without VCS data (-buildvcs=false) still names itself.
func TestMakeBuildStampsTheVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Missing(t, "make not installed")
	}
	out, err := exec.Command("make", "-n", "-C", "../..", "build", "VERSION=v9.9.9-test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	for _, want := range []string{"-X sitewatch/pipeline/buildinfo.stamped=v9.9.9-test", "./cmd/sitewatch", "./cmd/atlas-sim"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make build does not pass %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "-s -w") {
		t.Errorf("make build strips the debug symbols (that is make release's job):\n%s", out)
	}
	rel, err := exec.Command("make", "-n", "-C", "../..", "release", "VERSION=v9.9.9-test").CombinedOutput()
	if err != nil || !strings.Contains(string(rel), "-s -w -X sitewatch/pipeline/buildinfo.stamped=v9.9.9-test") {
		t.Errorf("make release: %v, want -s -w and the stamp:\n%s", err, rel)
	}
}
