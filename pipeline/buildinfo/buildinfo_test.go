package buildinfo

import (
	"runtime/debug"
	"testing"
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
