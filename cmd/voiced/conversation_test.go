package main

import "testing"

func TestKokoroVoice(t *testing.T) {
	mounted := []string{"af_heart", "af_alloy", "am_echo"}
	tests := map[string]string{"af_heart": "af_heart", "alloy": "af_alloy", "echo": "am_echo", "verse": "", "": ""}
	for name, want := range tests {
		if got := kokoroVoice(mounted, name); got != want {
			t.Errorf("kokoroVoice(%q) = %q, want %q", name, got, want)
		}
	}
}
