package main

import (
	"bytes"
	"strings"
	"testing"
)

// A run as `go test -json` writes it: a passing package with a passed, a skipped and an
// allow-listed test, a failing package, a package that panicked mid-test and one without tests.
const run = `{"Action":"start","Package":"github.com/voiced/voiced/meter"}
{"Action":"run","Package":"github.com/voiced/voiced/meter","Test":"TestA"}
{"Action":"output","Package":"github.com/voiced/voiced/meter","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"github.com/voiced/voiced/meter","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"github.com/voiced/voiced/meter","Test":"TestPG"}
{"Action":"output","Package":"github.com/voiced/voiced/meter","Test":"TestPG","Output":"=== RUN   TestPG\n"}
{"Action":"output","Package":"github.com/voiced/voiced/meter","Test":"TestPG","Output":"    meter_test.go:9: VOICED_TEST_POSTGRES_DSN is unset (Debian package postgresql)\n"}
{"Action":"output","Package":"github.com/voiced/voiced/meter","Test":"TestPG","Output":"--- SKIP: TestPG (0.00s)\n"}
{"Action":"skip","Package":"github.com/voiced/voiced/meter","Test":"TestPG"}
{"Action":"run","Package":"github.com/voiced/voiced/meter","Test":"TestRef"}
{"Action":"output","Package":"github.com/voiced/voiced/meter","Test":"TestRef","Output":"    x_test.go:3: VOICED_SHARED_DATA unset\n"}
{"Action":"skip","Package":"github.com/voiced/voiced/meter","Test":"TestRef"}
{"Action":"output","Package":"github.com/voiced/voiced/meter","Output":"ok\n"}
{"Action":"pass","Package":"github.com/voiced/voiced/meter","Elapsed":1.5}
{"Action":"run","Package":"github.com/voiced/voiced/door","Test":"TestB"}
{"Action":"run","Package":"github.com/voiced/voiced/door","Test":"TestB/sub"}
{"Action":"output","Package":"github.com/voiced/voiced/door","Test":"TestB/sub","Output":"    b_test.go:7: want 2, got 3\n"}
{"Action":"fail","Package":"github.com/voiced/voiced/door","Test":"TestB/sub"}
{"Action":"fail","Package":"github.com/voiced/voiced/door","Test":"TestB"}
{"Action":"fail","Package":"github.com/voiced/voiced/door","Elapsed":2}
{"Action":"run","Package":"github.com/voiced/voiced/wire","Test":"TestC"}
{"Action":"output","Package":"github.com/voiced/voiced/wire","Test":"TestC","Output":"panic: boom\n"}
{"Action":"fail","Package":"github.com/voiced/voiced/wire","Elapsed":0.2}
{"Action":"skip","Package":"github.com/voiced/voiced/sentence/x"}
`

func TestReport(t *testing.T) {
	for _, ci := range []bool{false, true} {
		var out bytes.Buffer
		s := newSummary(&out)
		for _, l := range strings.Split(strings.TrimSpace(run), "\n") {
			s.line([]byte(l))
		}
		if s.report(0, ci) {
			t.Fatalf("ci=%v: a run with failures passed:\n%s", ci, &out)
		}
		got := out.String()
		for _, want := range []string{
			"=== 1 passed, 2 failed, 2 skipped (tests and subtests); packages: 1 ok, 2 failed, 1 without tests",
			"ok  \tgithub.com/voiced/voiced/meter\t1.500s",
			"--- FAIL github.com/voiced/voiced/door TestB/sub (0.00s)\n    b_test.go:7: want 2, got 3",
			"--- UNFINISHED github.com/voiced/voiced/wire TestC\npanic: boom",
			"  SKIP meter TestPG: meter_test.go:9: VOICED_TEST_POSTGRES_DSN is unset (Debian package postgresql)\n",
			"  SKIP meter TestRef: x_test.go:3: VOICED_SHARED_DATA unset [allowed: reference data outside the repository]",
			"  FAIL door TestB/sub", "  FAIL wire (package)",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("ci=%v: report lacks %q:\n%s", ci, want, got)
			}
		}
		if strings.Contains(got, "outside the allow-list") != ci {
			t.Errorf("ci=%v: the allow-list verdict is wrong:\n%s", ci, got)
		}
	}
}

// Under CI a skip outside the allow-list alone fails the run; an allowed one does not; without CI
// neither does.
func TestSkipsUnderCI(t *testing.T) {
	for _, tc := range []struct {
		name, lines string
		ci, pass    bool
	}{
		{"unallowed skip, CI", skipLine("TestPG", "no postgres"), true, false},
		{"unallowed skip, not CI", skipLine("TestPG", "no postgres"), false, true},
		{"allowed skip, CI", skipLine("TestX", "VOICED_SHARED_DATA unset"), true, true},
		{"nothing at all", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := newSummary(&out)
			for _, l := range strings.Split(strings.TrimSpace(tc.lines), "\n") {
				if l != "" {
					s.line([]byte(l))
				}
			}
			if got := s.report(0, tc.ci); got != tc.pass {
				t.Fatalf("passed %v, want %v:\n%s", got, tc.pass, &out)
			}
		})
	}
	var out bytes.Buffer
	s := newSummary(&out)
	s.line([]byte(`{"Action":"pass","Package":"p","Test":"T"}`))
	if s.report(2, false) || !strings.Contains(out.String(), "go test exited 2") {
		t.Fatalf("a non-zero exit status of go test passed:\n%s", &out)
	}
}

func skipLine(test, reason string) string {
	return `{"Action":"output","Package":"github.com/voiced/voiced/meter","Test":"` + test + `","Output":"    ` + reason + `\n"}
{"Action":"skip","Package":"github.com/voiced/voiced/meter","Test":"` + test + `"}
{"Action":"pass","Package":"github.com/voiced/voiced/meter","Elapsed":1}`
}
