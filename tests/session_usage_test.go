package tests

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"
)

type sessionRecord struct {
	ID        string  `json:"id"`
	Principal string  `json:"principal"`
	Org       string  `json:"org"`
	Door      string  `json:"door"`
	Transport string  `json:"transport"`
	Start     string  `json:"start"`
	End       *string `json:"end"`
	Heard     float64 `json:"heardSeconds"`
	Spoken    float64 `json:"spokenSeconds"`
	EndReason string  `json:"endReason"`
}

type sessionPage struct {
	Sessions []sessionRecord `json:"sessions"`
	Next     *string         `json:"next"`
}

// getAs GETs path with a bearer and decodes the JSON answer into v; it returns the status.
func (s *server) getAs(t *testing.T, path, bearer string, v any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", s.Base+path, nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(v)
	return resp.StatusCode
}

// TestUsagePerSession (issue 20 item 4): a transcription session and a conversation each get a
// usage record (principal, org, door, transport, start, end, seconds, end reason) in the meter's
// store; the principal lists its own with its JWT, a page at a time; its heard seconds are the
// meter's; another principal reads none of them and may not name them.
func TestUsagePerSession(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{Args: []string{"--quota-seconds-per-day", "100"}})
	carol := s.jwt("carol", "acme")

	c := s.dialRealtime(t, carol, false)
	c.until("session.created", nil)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "transcription",
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil}}}})
	c.until("session.updated", nil)
	c.appendAudio(append(sileroSpeech(t, "samples.pcm"), silence24k(0.3)...))
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("conversation.item.input_audio_transcription.completed", nil)
	c.close()

	r := s.dialRealtime(t, carol, false)
	r.until("session.created", nil)
	r.close()

	var page sessionPage
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code := s.getAs(t, "/v1/usage/sessions", carol, &page); code != http.StatusOK {
			t.Fatalf("GET /v1/usage/sessions as carol: %d", code)
		}
		if len(page.Sessions) == 2 && page.Sessions[0].End != nil && page.Sessions[1].End != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("carol's sessions: %+v", page)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tr, conv := page.Sessions[0], page.Sessions[1]
	if tr.Principal != "carol" || tr.Org != "acme" || tr.Door != "transcription" || tr.Transport != "websocket" || tr.EndReason != "client_closed" || tr.Heard <= 0 {
		t.Errorf("transcription session record: %+v", tr)
	}
	if conv.Door != "conversation" || conv.Heard != 0 || conv.Spoken != 0 {
		t.Errorf("conversation record: %+v", conv)
	}
	heard, _ := s.usageWhen(t, "carol", func(h, _ float64) bool { return math.Abs(h-tr.Heard) < 1e-5 })
	if math.Abs(heard-tr.Heard) > 1e-5 {
		t.Errorf("session heard %.6f s, the meter's %.6f s", tr.Heard, heard)
	}

	// Paging: one at a time.
	var first, second sessionPage
	s.getAs(t, "/v1/usage/sessions?limit=1", carol, &first)
	if len(first.Sessions) != 1 || first.Next == nil || first.Sessions[0].ID != tr.ID {
		t.Fatalf("first page: %+v", first)
	}
	s.getAs(t, "/v1/usage/sessions?limit=1&after="+*first.Next, carol, &second)
	if len(second.Sessions) != 1 || second.Next != nil || second.Sessions[0].ID != conv.ID {
		t.Fatalf("second page: %+v", second)
	}

	// GET /v1/usage lists the same records with view=sessions (issue 20: "GET /v1/usage can list them").
	var viaUsage sessionPage
	if code := s.getAs(t, "/v1/usage?view=sessions", carol, &viaUsage); code != http.StatusOK || len(viaUsage.Sessions) != 2 ||
		viaUsage.Sessions[0].ID != tr.ID || viaUsage.Sessions[0].Heard != tr.Heard || viaUsage.Sessions[1].ID != conv.ID {
		t.Errorf("GET /v1/usage?view=sessions as carol: %d %+v", code, viaUsage)
	}

	// Another principal: none of carol's, and naming her is refused; the service token reads all.
	dave := s.jwt("dave", "acme")
	var none sessionPage
	if code := s.getAs(t, "/v1/usage/sessions", dave, &none); code != http.StatusOK || len(none.Sessions) != 0 {
		t.Errorf("dave's sessions: %d %+v", code, none)
	}
	var refused map[string]any
	if code := s.getAs(t, "/v1/usage/sessions?principal=carol", dave, &refused); code != http.StatusForbidden || refused["name"] != "forbidden_principal" {
		t.Errorf("dave naming carol: %d %v", code, refused)
	}
	if code := s.getAs(t, "/v1/usage?view=sessions&principal=carol", dave, &refused); code != http.StatusForbidden {
		t.Errorf("dave listing carol's sessions through /v1/usage: %d %v", code, refused)
	}
	if code := s.getAs(t, "/v1/usage?principal=carol", dave, &refused); code != http.StatusForbidden {
		t.Errorf("dave reading carol's usage: %d %v", code, refused)
	}
	// Carol's quota, read with her JWT: what she used (all heard, in the transcription session).
	var q struct {
		Principal        string  `json:"principal"`
		Limited          bool    `json:"limited"`
		UsedSeconds      float64 `json:"usedSeconds"`
		RemainingSeconds float64 `json:"remainingSeconds"`
	}
	if code := s.getAs(t, "/v1/usage/quota", carol, &q); code != http.StatusOK || q.Principal != "carol" || !q.Limited ||
		math.Abs(q.UsedSeconds-tr.Heard) > 1e-5 || math.Abs(q.RemainingSeconds-(100-tr.Heard)) > 1e-5 {
		t.Errorf("carol's quota: %d %+v (heard %.6f)", code, q, tr.Heard)
	}
	if code := s.getAs(t, "/v1/usage/quota?principal=carol", dave, &refused); code != http.StatusForbidden {
		t.Errorf("dave reading carol's quota: %d", code)
	}
	var all sessionPage
	s.getAs(t, "/v1/usage/sessions?principal=carol", s.Token, &all)
	if len(all.Sessions) != 2 {
		t.Errorf("service token, carol's sessions: %+v", all)
	}
	s.stop()
}
