package main

import (
	"fmt"
	"testing"
)

func TestKokoroVoice(t *testing.T) {
	mounted := []string{"af_heart", "af_alloy", "am_echo"}
	tests := map[string]string{"af_heart": "af_heart", "alloy": "af_alloy", "echo": "am_echo", "verse": "", "": ""}
	for name, want := range tests {
		if got := kokoroVoice(mounted, name); got != want {
			t.Errorf("kokoroVoice(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestOriginHosts(t *testing.T) {
	got := originHosts([]string{"https://app.example.com", "*.example.com", "http://localhost:3000"})
	if fmt.Sprint(got) != "[app.example.com *.example.com localhost:3000]" {
		t.Fatalf("originHosts = %v", got)
	}
}
