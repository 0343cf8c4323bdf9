package tests

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
)

// speak asks POST /v1/audio/speech for pcm with the given headers and returns the seconds of
// audio it sent.
func (s *server) speak(t *testing.T, text string, hdr map[string]string) float64 {
	t.Helper()
	req, _ := http.NewRequest("POST", s.Base+"/v1/audio/speech",
		strings.NewReader(`{"model":"tts-1","voice":"alloy","response_format":"pcm","input":"`+text+`"}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/audio/speech %v: %d %s", hdr, resp.StatusCode, b)
	}
	return float64(len(b)) / 2 / 24000
}

// TestRawDoorsBillTheSpeaker (issue 20 item 3): a raw door called with a principal's JWT meters
// under that principal; the service token naming a principal (X-Voiced-Principal) meters under
// it; the service token alone under "service". Each principal's usage equals the audio it got.
func TestRawDoorsBillTheSpeaker(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	alice := s.speak(t, "Hello from Alice.", map[string]string{"Authorization": "Bearer " + s.jwt("alice", "acme")})
	bob := s.speak(t, "Bob speaks for longer than Alice does.", map[string]string{"Authorization": "Bearer " + s.Token,
		"X-Voiced-Principal": "bob", "X-Voiced-Org": "globex"})
	svc := s.speak(t, "Nobody named.", map[string]string{"Authorization": "Bearer " + s.Token})
	for who, want := range map[string]float64{"alice": alice, "bob": bob, "service": svc} {
		_, spoken := s.usageWhen(t, who, func(_, spoken float64) bool { return spoken >= want-1e-6 })
		if math.Abs(spoken-want) > 1e-5 {
			t.Errorf("%s: metered %.6f s spoken, was sent %.6f s", who, spoken, want)
		}
	}
	// A bad JWT is refused (not billed to anyone); a bad principal header is refused by name.
	req, _ := http.NewRequest("POST", s.Base+"/v1/audio/speech", strings.NewReader(`{"input":"x"}`))
	req.Header.Set("Authorization", "Bearer not-a-jwt")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a bad bearer: %d, want 401", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", s.Base+"/v1/audio/speech", strings.NewReader(`{"input":"x"}`))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("X-Voiced-Org", "orphan")
	resp, err = s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "invalid_principal_header") {
		t.Errorf("X-Voiced-Org alone: %d %s", resp.StatusCode, b)
	}
	s.stop()
}
