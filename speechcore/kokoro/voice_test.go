package kokoro

import "testing"

func TestMatchVoice(t *testing.T) {
	mounted := []string{"af_heart", "af_alloy", "am_echo"}
	tests := map[string]string{"af_heart": "af_heart", "alloy": "af_alloy", "echo": "am_echo", "verse": "", "": ""}
	for name, want := range tests {
		if got := MatchVoice(mounted, name); got != want {
			t.Errorf("MatchVoice(%q) = %q, want %q", name, got, want)
		}
	}
}
