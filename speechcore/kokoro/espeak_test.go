package kokoro

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestEspeakStaysInsideItsStack: espeak-ng 1.51 counts a rule's "more syllables follow" context
// (MatchRule's RULE_SYLLABLE) by walking forward from the word to the next space byte, past the
// word's end into whatever its stack held before. On a thread whose stack holds no space up to
// its end (a new thread's, mostly zeros) the walk leaves the stack: the server's SIGSEGV in
// utf8_in on Spanish synthesis (es, "estás"). The probe runs the production clause loop on such
// a stack, ending at an inaccessible page, in a child process, and wants the word's IPA.
func TestEspeakStaysInsideItsStack(t *testing.T) {
	if os.Getenv("VOICED_ESPEAK_STACK_PROBE") == "1" {
		for _, fill := range []byte{0, 't'} {
			out, err := espeakOnStack("es", "estás", fill)
			if err != nil {
				t.Fatal(err)
			}
			if out != "estˈas" {
				t.Fatalf("fill %q: %q, want estˈas", fill, out)
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEspeakStaysInsideItsStack$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VOICED_ESPEAK_STACK_PROBE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("espeak-ng on a stack with no space byte: %v\n%s", err, out)
	}
}
