package speechcore

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/voiced/voiced/"

// voicedDeps maps every package of the module to the voiced packages it links (go list's Deps:
// direct and indirect, production code only).
func voicedDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		deps[f[0]] = []string{}
		for _, dep := range f[1:] {
			if strings.HasPrefix(dep, module) {
				deps[f[0]] = append(deps[f[0]], dep)
			}
		}
	}
	return deps
}

// Imports run one way: the engines (speechcore and its subpackages) know nothing of the doors
// that serve them (speechdoor), the conversation (session, rtc, bridge), the meter or the
// binary; audio and sentence, which every side uses, know no other voiced package; the speech
// doors know nothing of the conversation.
func TestImportDirection(t *testing.T) {
	under := func(dep string, roots ...string) bool {
		for _, r := range roots {
			if dep == module+r || strings.HasPrefix(dep, module+r+"/") {
				return true
			}
		}
		return false
	}
	all := voicedDeps(t)
	for _, rule := range []struct {
		pkgs    []string // the packages the rule holds for: these roots and their subpackages
		allowed func(pkg, dep string) bool
		why     string
	}{
		{[]string{"speechcore"}, func(_, dep string) bool {
			return under(dep, "speechcore", "door", "audio", "sentence")
		}, "the engines import only door, audio, sentence and speechcore's own packages"},
		{[]string{"audio"}, func(_, dep string) bool {
			return under(dep, "audio")
		}, "audio imports no voiced package but its own subpackages"},
		{[]string{"sentence"}, func(_, dep string) bool {
			return false
		}, "sentence imports no voiced package"},
		{[]string{"speechdoor"}, func(_, dep string) bool {
			return !under(dep, "session", "rtc")
		}, "the speech doors import neither session nor rtc"},
	} {
		checked := 0
		for pkg, deps := range all {
			if !under(pkg, rule.pkgs...) {
				continue
			}
			checked++
			for _, dep := range deps {
				if !rule.allowed(pkg, dep) {
					t.Errorf("%s imports %s: %s", pkg, dep, rule.why)
				}
			}
		}
		if checked == 0 {
			t.Errorf("no package under %v was listed: the rule checks nothing", rule.pkgs)
		}
	}
}
