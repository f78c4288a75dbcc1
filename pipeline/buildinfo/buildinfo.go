// Package buildinfo names the build of sitewatch: one version string for `sitewatch
// --version`, `atlas-sim --version`, the publish manifests and the webhook, so a manifest
// written by `run` and one written by `publish` from the same binary agree (and republishing
// rewrites nothing).
package buildinfo

import "runtime/debug"

// stamped is the version `make build` writes into the binary (`git describe --always --dirty`
// through -ldflags "-X sitewatch/pipeline/buildinfo.stamped=…"): it names the build even where
// the toolchain stamps no VCS data (GOFLAGS=-buildvcs=false, a source tarball in CI).
var stamped string

// Version is the version of the running binary: the version `make build` stamped, else the
// module version when it was built as a module (`go install sitewatch/cmd/sitewatch@v1.4.0`, or the pseudo-version Go stamps from
// the work tree), else the VCS revision (12 hex digits, "-dirty" with uncommitted changes),
// else "(devel)". It is never empty.
func Version() string {
	if stamped != "" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return devel
	}
	return fromBuildInfo(bi)
}

// devel names a build that carries neither a module version nor a VCS revision (go test,
// go run outside a repository).
const devel = "(devel)"

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != devel {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return devel
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
