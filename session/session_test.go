package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

func TestTicketStoreOneUseAndExpiry(t *testing.T) {
	clk := newClock()
	s := NewMemoryTickets(clk.Now)
	ctx := context.Background()
	a, b := NewTicket(), NewTicket()
	if a == b || !strings.HasPrefix(a, "ek_") || len(a) != 3+43 {
		t.Fatalf("tickets %q %q", a, b)
	}
	s.Put(ctx, a, Grant{Principal: Principal{Subject: "u"}}, 30*time.Second, 0)
	s.Put(ctx, b, Grant{Principal: Principal{Subject: "u"}}, 30*time.Second, 0)
	if g, err := s.Take(ctx, a); err != nil || g.Principal.Subject != "u" {
		t.Fatalf("first take: %v %v", g, err)
	}
	if _, err := s.Take(ctx, a); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("second take: %v, want ErrTicketInvalid", err)
	}
	clk.Advance(30 * time.Second)
	if _, err := s.Take(ctx, b); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("take after expiry: %v, want ErrTicketInvalid", err)
	}
}

func TestMintRefusals(t *testing.T) {
	ts := newTestServer(t, Config{})
	tests := map[string]struct {
		bearer func() string
		org    string
		body   any
		status int
		name   string
	}{
		"no credential":   {bearer: func() string { return "" }, status: 401, name: "missing_credential"},
		"no sub":          {bearer: func() string { return token(t, ts.clock, map[string]any{"sub": nil}) }, status: 401, name: "token_without_subject"},
		"expired":         {bearer: func() string { return token(t, ts.clock, map[string]any{"exp": ts.clock.Now().Add(-time.Hour).Unix()}) }, status: 401, name: "invalid_token"},
		"no exp":          {bearer: func() string { return token(t, ts.clock, map[string]any{"exp": nil}) }, status: 401, name: "invalid_token"},
		"bad signature":   {bearer: func() string { return token(t, ts.clock, nil) + "x" }, status: 401, name: "invalid_token"},
		"org not member":  {bearer: func() string { return token(t, ts.clock, map[string]any{"orgs": []string{"org-b"}}) }, org: "org-c", status: 403, name: "org_not_permitted"},
		"ttl too long":    {bearer: func() string { return token(t, ts.clock, nil) }, body: map[string]any{"expires_in": 3600}, status: 400, name: "invalid_ttl"},
		"bad session":     {bearer: func() string { return token(t, ts.clock, nil) }, body: map[string]any{"session": map[string]any{"voice": 7}}, status: 400, name: "invalid_request"},
		"member org ok":   {bearer: func() string { return token(t, ts.clock, map[string]any{"orgs": []string{"org-b"}}) }, org: "org-b", status: 200},
		"own org ok":      {bearer: func() string { return token(t, ts.clock, nil) }, org: "org-a", status: 200},
		"ttl in range ok": {bearer: func() string { return token(t, ts.clock, nil) }, body: map[string]any{"expires_in": 60}, status: 200},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.org != "" {
				hdr["X-Org-Id"] = tc.org
			}
			code, out := ts.post(t, "/v1/voice/session", tc.bearer(), tc.body, hdr)
			if code != tc.status {
				t.Fatalf("status %d, want %d (%v)", code, tc.status, out)
			}
			if tc.name != "" && out["name"] != tc.name {
				t.Fatalf("name %v, want %s", out["name"], tc.name)
			}
			if code == 200 {
				if !strings.HasPrefix(out["ticket"].(string), "ek_") || out["rate"] != 24000.0 || out["format"] != "pcm16" || out["channels"] != 1.0 {
					t.Fatalf("answer %v", out)
				}
			}
		})
	}
}

func TestOrgRuleBindsTheTicket(t *testing.T) {
	ts := newTestServer(t, Config{})
	code, out := ts.post(t, "/v1/voice/session", token(t, ts.clock, map[string]any{"orgs": []string{"org-b"}}), nil,
		map[string]string{"X-Org-Id": "org-b"})
	if code != 200 {
		t.Fatal(out)
	}
	g, err := ts.cfg.Tickets.Take(context.Background(), out["ticket"].(string))
	if err != nil || g.Principal != (Principal{Subject: "user-1", Org: "org-b"}) {
		t.Fatalf("grant %+v %v", g, err)
	}
}

func TestOpenAIShapedMint(t *testing.T) {
	ts := newTestServer(t, Config{})
	jwt := token(t, ts.clock, nil)
	code, beta := ts.post(t, "/v1/realtime/sessions", jwt, map[string]any{"model": "gpt-4o-realtime-preview", "voice": "verse",
		"instructions": "Be brief.", "turn_detection": nil}, nil)
	if code != 200 {
		t.Fatalf("beta: %d %v", code, beta)
	}
	cs := beta["client_secret"].(map[string]any)
	if !strings.HasPrefix(cs["value"].(string), "ek_") || cs["expires_at"].(float64) != float64(ts.clock.Now().Add(30*time.Second).Unix()) {
		t.Fatalf("client_secret %v", cs)
	}
	if beta["voice"] != "verse" || beta["instructions"] != "Be brief." || beta["turn_detection"] != nil {
		t.Fatalf("beta session %v", beta)
	}
	code, ga := ts.post(t, "/v1/realtime/client_secrets", jwt, map[string]any{"expires_after": map[string]any{"anchor": "created_at", "seconds": 60},
		"session": map[string]any{"type": "realtime", "model": "gpt-realtime", "instructions": "Hi."}}, nil)
	if code != 200 || !strings.HasPrefix(ga["value"].(string), "ek_") || ga["session"].(map[string]any)["type"] != "realtime" {
		t.Fatalf("GA: %d %v", code, ga)
	}
	if ga["expires_at"].(float64) != float64(ts.clock.Now().Add(time.Minute).Unix()) {
		t.Fatalf("expires_at %v", ga["expires_at"])
	}
	// The config the ticket carried is the session's when the socket opens.
	c, _, err := ts.dial(t, "/v1/realtime?model=gpt-realtime", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + ga["value"].(string)}}})
	if err != nil {
		t.Fatal(err)
	}
	created := c.expect("session.created")[0]
	if got := created["session"].(map[string]any)["instructions"]; got != "Hi." {
		t.Fatalf("session.created instructions %v", got)
	}
	code, e := ts.post(t, "/v1/realtime/sessions", "", nil, nil)
	if code != 401 || e["error"].(map[string]any)["code"] != "missing_credential" {
		t.Fatalf("OpenAI-shaped refusal %d %v", code, e)
	}
}

func TestSocketAuth(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})

	// A ticket works once.
	tk := ts.ticket(t)
	c, _, err := ts.dial(t, "/v1/voice?ticket="+tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.expect("session.created")
	_, resp, err := ts.dial(t, "/v1/voice?ticket="+tk, nil)
	assertRefused(t, resp, err, 401, "ticket_invalid")

	// An expired ticket is refused.
	tk = ts.ticket(t)
	ts.clock.Advance(31 * time.Second)
	_, resp, err = ts.dial(t, "/v1/voice?ticket="+tk, nil)
	assertRefused(t, resp, err, 401, "ticket_invalid")

	// No credential; a JWT without sub.
	_, resp, err = ts.dial(t, "/v1/realtime?model=x", nil)
	assertRefused(t, resp, err, 401, "missing_credential")
	_, resp, err = ts.dial(t, "/v1/realtime?model=x", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token(t, ts.clock, map[string]any{"sub": nil})}}})
	assertRefused(t, resp, err, 401, "token_without_subject")

	// A principal JWT in Authorization opens a conversation.
	c, _, err = ts.dial(t, "/v1/realtime?model=x", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token(t, ts.clock, nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	c.expect("session.created")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func TestSubprotocolTicketAndEcho(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	c, resp, err := ts.dial(t, "/v1/realtime?model=m", &websocket.DialOptions{
		Subprotocols: []string{"realtime", "openai-insecure-api-key." + ts.ticket(t), "openai-beta.realtime-v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "realtime" || c.conn.Subprotocol() != "realtime" {
		t.Fatalf("subprotocol %q", got)
	}
	// The beta marker chose the beta dialect: a beta session object.
	s := c.expect("session.created")[0]["session"].(map[string]any)
	if _, beta := s["input_audio_format"]; !beta {
		t.Fatalf("beta session expected: %v", s)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func TestOriginChecked(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Origins: door.MustOrigins("https://app.example.com", "*.trusted.test")})
	tests := map[string]struct {
		origin string
		ok     bool
	}{
		"foreign page":    {"https://evil.example", false},
		"listed origin":   {"https://app.example.com", true},
		"listed pattern":  {"https://a.trusted.test", true},
		"same host":       {ts.URL, true},
		"scheme mismatch": {"http://app.example.com", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, resp, err := ts.dial(t, "/v1/voice?ticket="+ts.ticket(t), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {tc.origin}}})
			if !tc.ok {
				assertRefused(t, resp, err, 403, "origin_not_allowed")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.expect("session.created")
			c.conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

func TestCapacityRefusedBeforeUpgrade(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{MaxConversations: 2, MaxPerTenant: 1})
	a := ts.open(t)

	// Same org: over the tenant cap.
	_, resp, err := ts.dial(t, "/v1/voice?ticket="+ts.ticket(t), nil)
	assertRefused(t, resp, err, 429, "too_many_conversations_for_tenant")

	// Another org fills the server; a third is over the global cap, and its ticket is not spent.
	other := func(org string) string {
		code, out := ts.post(t, "/v1/voice/session", token(t, ts.clock, map[string]any{"org": org, "sub": "user-z"}), nil, nil)
		if code != 200 {
			t.Fatal(out)
		}
		return out["ticket"].(string)
	}
	b, _, err := ts.dial(t, "/v1/voice?ticket="+other("org-y"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b.expect("session.created")
	tk := other("org-z")
	_, resp, err = ts.dial(t, "/v1/voice?ticket="+tk, nil)
	assertRefused(t, resp, err, 429, "too_many_conversations")
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	if h := ts.VoiceHealth(); h.Busy != 2 || h.Capacity != 2 {
		t.Fatalf("health %+v", h)
	}

	// Closing one frees a slot (the server notices the close asynchronously: poll health).
	a.conn.Close(websocket.StatusNormalClosure, "")
	for deadline := time.Now().Add(5 * time.Second); ts.VoiceHealth().Busy != 1; {
		if time.Now().After(deadline) {
			t.Fatal("slot not released")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, _, err := ts.dial(t, "/v1/voice?ticket="+tk, nil)
	if err != nil {
		t.Fatalf("the ticket refused at capacity should still work: %v", err)
	}
	c.expect("session.created")
	b.conn.Close(websocket.StatusNormalClosure, "")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func assertRefused(t *testing.T, resp *http.Response, err error, status int, name string) {
	t.Helper()
	if err == nil {
		t.Fatalf("upgrade succeeded, want %d %s", status, name)
	}
	if resp == nil || resp.StatusCode != status {
		t.Fatalf("refusal %v, want %d", resp, status)
	}
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	json.Unmarshal(b, &body)
	got := body["name"]
	if e, ok := body["error"].(map[string]any); ok {
		got = e["code"]
	}
	if got != name {
		t.Fatalf("refusal body %s, want name %s", b, name)
	}
}

// The text turn of docs §8.3 with the Echo mind, audio out through the voice.
func TestTextTurnEventOrder(t *testing.T) {
	testkit.CheckLeaks(t)
	meter := &recordingMeter{}
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}, Meter: meter}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello there my friend"}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.done")
	got := strings.Join(compact(types(evs)), " ")
	want := "response.created rate_limits.updated response.output_item.added conversation.item.added response.content_part.added " +
		"response.output_audio_transcript.delta response.output_audio.delta+ response.output_audio.done " +
		"response.output_audio_transcript.done response.content_part.done response.output_item.done conversation.item.done response.done"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	done := evs[len(evs)-1]["response"].(map[string]any)
	out := done["output"].([]any)[0].(map[string]any)
	transcript := out["content"].([]any)[0].(map[string]any)["transcript"]
	if done["status"] != "completed" || transcript != "You said: hello there my friend." {
		t.Fatalf("response.done %v", done)
	}
	if created := evs[0]["response"].(map[string]any); fmt.Sprint(created["output"]) != "[]" || created["status"] != "in_progress" {
		t.Fatalf("response.created %v", created)
	}
	usage := done["usage"].(map[string]any)
	if usage["spoken_seconds"].(float64) <= 0 {
		t.Fatalf("usage %v", usage)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	ts.http.Close()
	ts.Wait()
	if _, spoken, who := meter.total(); spoken <= 0 || !who["user-1/org-a"] {
		t.Fatalf("meter spoken %v for %v", spoken, who)
	}
}

// compact folds runs of the same delta into "type+".
func compact(ts []string) []string {
	var out []string
	for _, t := range ts {
		if n := len(out); n > 0 && (out[n-1] == t || out[n-1] == t+"+") && strings.HasSuffix(t, ".delta") && strings.Contains(t, "audio.") {
			out[n-1] = t + "+"
			continue
		}
		out = append(out, t)
	}
	return out
}

func TestTextOnlyBeta(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}}})
	c, _, err := ts.dial(t, "/v1/realtime?model=m", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + ts.ticket(t)}, "OpenAI-Beta": {"realtime=v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	c.expect("session.created")
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"modalities": []string{"text"}, "turn_detection": nil}})
	s := c.expect("session.updated")[0]["session"].(map[string]any)
	if fmt.Sprint(s["modalities"]) != "[text]" || s["turn_detection"] != nil {
		t.Fatalf("session.updated %v", s)
	}
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "beta text"}}}})
	c.expect("conversation.item.created")
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.done")
	var text strings.Builder
	for _, e := range evs {
		if e["type"] == "response.text.delta" {
			text.WriteString(e["delta"].(string))
		}
		if strings.Contains(e["type"].(string), "audio") {
			t.Fatalf("audio event in a text-only response: %v", e)
		}
	}
	head := strings.Join(types(evs[:5]), " ")
	if head != "response.created rate_limits.updated response.output_item.added conversation.item.created response.content_part.added" || text.String() != "You said: beta text." {
		t.Fatalf("beta text turn: %s / %q", head, text.String())
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// Client-driven audio turn (turn_detection null): commit, transcription, response.create.
func TestCommitAudioTurn(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"what time is it"}, Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil, "transcription": map[string]any{"model": "whisper-1"}}}}})
	c.expect("session.updated")
	for range 5 {
		c.send(appendEvent(pcm24(100, true)))
	}
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	evs := c.expect("input_audio_buffer.committed", "conversation.item.added", "conversation.item.done",
		"conversation.item.input_audio_transcription.completed")
	item := evs[1]["item"].(map[string]any)
	part := item["content"].([]any)[0].(map[string]any)
	if item["role"] != "user" || part["type"] != "input_audio" || part["transcript"] != nil {
		t.Fatalf("user item %v", item)
	}
	if evs[3]["transcript"] != "what time is it" || evs[3]["item_id"] != item["id"] {
		t.Fatalf("transcription %v", evs[3])
	}
	c.send(map[string]any{"type": "response.create"})
	done := c.until("response.done")
	tr := done[len(done)-1]["response"].(map[string]any)["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"]
	if tr != "You said: what time is it." {
		t.Fatalf("reply transcript %v", tr)
	}
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": item["id"]})
	got := c.expect("conversation.item.retrieved")[0]["item"].(map[string]any)
	if got["content"].([]any)[0].(map[string]any)["transcript"] != "what time is it" {
		t.Fatalf("retrieved %v", got)
	}
	// Unknown items: OpenAI's codes, and the client's event_id back (Pipecat reads the item id
	// from "rci_<item_id>" and ends its session on any other code).
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": "item_gone", "event_id": "rci_item_gone"})
	e := c.expectError("item_retrieve_invalid_item_id")
	if e["event_id"] != "rci_item_gone" {
		t.Errorf("retrieve error %v: want the client's event_id", e)
	}
	c.send(map[string]any{"type": "conversation.item.delete", "item_id": "item_gone"})
	c.expectError("item_delete_invalid_item_id")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// server_vad: the floor ends the turn and a response follows by itself.
func TestServerVADTurn(t *testing.T) {
	testkit.CheckLeaks(t)
	meter := &recordingMeter{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hi"}, Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector, Meter: meter}})
	c := ts.open(t)
	c.send(appendEvent(pcm24(200, false)))
	for range 6 {
		c.send(appendEvent(pcm24(100, true)))
	}
	for range 3 {
		c.send(appendEvent(pcm24(100, false)))
	}
	evs := c.expect("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed",
		"conversation.item.added", "conversation.item.done", "response.created", "rate_limits.updated")
	started, stopped := evs[0], evs[1]
	if started["audio_start_ms"].(float64) < 150 || started["audio_start_ms"].(float64) > 250 ||
		stopped["audio_end_ms"].(float64) < 900 || started["item_id"] != stopped["item_id"] || evs[2]["item_id"] != started["item_id"] {
		t.Fatalf("turn events %v %v %v", started, stopped, evs[2])
	}
	done := c.until("response.done")
	if d := done[len(done)-1]["response"].(map[string]any); d["status"] != "completed" || d["usage"].(map[string]any)["heard_seconds"].(float64) <= 0 {
		t.Fatalf("response.done %v", d)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	ts.http.Close()
	ts.Wait()
	if heard, spoken, _ := meter.total(); heard < 500*time.Millisecond || spoken <= 0 {
		t.Fatalf("metered heard %v spoken %v", heard, spoken)
	}
}

// Barge-in: speech during a reply cancels it mid-way; truncate cuts the transcript to what was heard.
func TestBargeInAndTruncate(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{}, 1)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"tell me a story. a long one"}, Voice: fakeVoice{gate: gate}, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	for range 5 {
		c.send(appendEvent(pcm24(100, true)))
	}
	for range 3 {
		c.send(appendEvent(pcm24(100, false)))
	}
	gate <- struct{}{} // the first sentence may speak; the second waits
	evs := c.until("response.output_audio_transcript.delta")
	evs = append(evs, c.until("response.output_audio.delta")...)
	var itemID string
	for _, e := range evs {
		if e["type"] == "response.output_item.added" {
			itemID = e["item"].(map[string]any)["id"].(string)
		}
	}
	// Read the first sentence's audio fully: it ends where the second transcript delta starts.
	rest := c.until("response.output_audio_transcript.delta")
	var firstMs float64 = 20 // the delta already read (fakeVoice: 240 samples per char, 4800 per delta)
	for _, e := range rest {
		if e["type"] == "response.output_audio.delta" {
			firstMs += 200
		}
	}
	// The user speaks again: barge-in.
	c.send(appendEvent(pcm24(100, true)))
	evs = c.until("response.done")
	if evs[0]["type"] != "input_audio_buffer.speech_started" {
		t.Fatalf("first event after barge-in: %v", evs[0]["type"])
	}
	done := evs[len(evs)-1]["response"].(map[string]any)
	details := done["status_details"].(map[string]any)
	if done["status"] != "cancelled" || details["type"] != "cancelled" || details["reason"] != "turn_detected" {
		t.Fatalf("response.done %v", done)
	}
	// Truncate beyond the audio: an error; inside the first sentence: the transcript is cut.
	c.send(map[string]any{"type": "conversation.item.truncate", "item_id": itemID, "content_index": 0, "audio_end_ms": 60000})
	if e := c.expectError("invalid_value"); e["param"] != "audio_end_ms" {
		t.Fatalf("truncate beyond: %v", e)
	}
	c.send(map[string]any{"type": "conversation.item.truncate", "item_id": "item_nope", "content_index": 0, "audio_end_ms": 10})
	c.expectError(wire.CodeTruncateInvalidItemID)
	c.send(map[string]any{"type": "conversation.item.truncate", "item_id": itemID, "content_index": 0, "audio_end_ms": 200})
	c.expect("conversation.item.truncated")
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": itemID})
	got := c.expect("conversation.item.retrieved")[0]["item"].(map[string]any)
	tr := got["content"].([]any)[0].(map[string]any)["transcript"].(string)
	// "You said: tell me a story." is 26 chars = 260 ms; 200 ms keeps 20 chars, cut at a word.
	if tr != "You said: tell me a" {
		t.Fatalf("truncated transcript %q (first sentence %.0f ms)", tr, firstMs)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// A client that interrupts playback itself truncates, then cancels, while the reply is still
// running: the reply's end must not write back the transcript (or audio) the user never heard.
func TestTruncateBeforeResponseDone(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{}, 1)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{gate: gate}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "tell me a story. a long one"}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	gate <- struct{}{} // the first sentence speaks; the second waits
	var itemID string
	for _, e := range c.until("response.output_audio.delta") {
		if e["type"] == "response.output_item.added" {
			itemID = e["item"].(map[string]any)["id"].(string)
		}
	}
	c.until("response.output_audio_transcript.delta") // the second sentence's: the first was sent whole
	c.send(map[string]any{"type": "conversation.item.truncate", "item_id": itemID, "content_index": 0, "audio_end_ms": 200})
	c.expect("conversation.item.truncated")
	c.send(map[string]any{"type": "response.cancel"})
	evs := c.until("response.done")
	out := evs[len(evs)-1]["response"].(map[string]any)["output"].([]any)[0].(map[string]any)
	// "You said: tell me a story." is 26 chars = 260 ms; 200 ms keeps 20 chars, cut at a word.
	const want = "You said: tell me a"
	if tr := out["content"].([]any)[0].(map[string]any)["transcript"]; tr != want {
		t.Fatalf("response.done output transcript %q, want %q", tr, want)
	}
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": itemID})
	part := c.expect("conversation.item.retrieved")[0]["item"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if part["transcript"] != want {
		t.Fatalf("retrieved transcript %q, want %q", part["transcript"], want)
	}
	if b, _ := base64.StdEncoding.DecodeString(part["audio"].(string)); len(b) != 200*48 {
		t.Fatalf("retrieved %d bytes of audio, want the %d played", len(b), 200*48)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// A fake OpenAI-compatible chat server: the first request gets a tool call, later ones text.
type toolChat struct {
	requests chan map[string]any
}

func (f *toolChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.requests <- body
	msgs := body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if last["role"] == "tool" {
		chunk(map[string]any{"content": "It is sunny in Oslo."})
	} else {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_w1", "type": "function",
			"function": map[string]any{"name": "weather", "arguments": ""}}}})
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"city":`}}}})
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `"Oslo"}`}}}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func TestToolCallRoundTrip(t *testing.T) {
	testkit.CheckLeaks(t)
	chat := &toolChat{requests: make(chan map[string]any, 4)}
	chatSrv := httptest.NewServer(chat)
	defer chatSrv.Close()
	m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: chatSrv.URL + "/v1", Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, Config{Engines: Engines{Mind: m, Voice: fakeVoice{}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "Use tools.",
		"tools": []any{map[string]any{"type": "function", "name": "weather", "description": "weather now",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}})
	c.expect("session.updated")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Weather in Oslo?"}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	evs := c.expect("response.created", "rate_limits.updated", "response.output_item.added", "conversation.item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "conversation.item.done", "response.done")
	fc := evs[2]["item"].(map[string]any)
	if fc["type"] != "function_call" || fc["call_id"] != "call_w1" || fc["name"] != "weather" || fc["arguments"] != "" {
		t.Fatalf("function_call item %v", fc)
	}
	if args := evs[6]; args["arguments"] != `{"city":"Oslo"}` || args["name"] != "weather" || args["call_id"] != "call_w1" {
		t.Fatalf("arguments.done %v", args)
	}
	first := <-chat.requests
	if tools := first["tools"].([]any); len(tools) != 1 || first["messages"].([]any)[0].(map[string]any)["content"] != "Use tools." {
		t.Fatalf("first chat request %v", first)
	}

	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "function_call_output",
		"call_id": "call_w1", "output": `{"sky":"sunny"}`}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	evs = c.until("response.done")
	tr := evs[len(evs)-1]["response"].(map[string]any)["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"]
	if tr != "It is sunny in Oslo." {
		t.Fatalf("answer after the tool: %v", tr)
	}
	second := <-chat.requests
	msgs := second["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" {
		t.Fatalf("second request roles %v", roles)
	}
	if msgs[3].(map[string]any)["tool_call_id"] != "call_w1" || msgs[2].(map[string]any)["tool_calls"] == nil {
		t.Fatalf("second request %v", msgs)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// failingMind always fails, like a mind server that is down.
type failingMind struct{}

func (failingMind) Answer(context.Context, mind.Request, func(mind.Delta) error) (mind.Reply, error) {
	return mind.Reply{}, &mind.Error{Kind: mind.ErrUnavailable, Message: "the mind's server could not be reached"}
}

func TestMindFailureKeepsSession(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Mind: failingMind{}, Voice: fakeVoice{}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "response.create"})
	evs := c.expect("response.created", "rate_limits.updated", "error", "response.done")
	if d := evs[3]["response"].(map[string]any); d["status"] != "failed" {
		t.Fatalf("response.done %v", d)
	}
	c.send(map[string]any{"type": "response.create"}) // a new response is allowed: the session lives
	c.expect("response.created", "rate_limits.updated", "error", "response.done")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func TestBadInputKeepsSession(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{})
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{gate: gate}}})
	c := ts.open(t)
	tests := []struct {
		name string
		send string
		code string
	}{
		{"malformed JSON", `{"type":`, wire.CodeInvalidEvent},
		{"no type", `{"event_id":"e1"}`, wire.CodeInvalidEvent},
		{"unknown event", `{"type":"conversation.frobnicate"}`, wire.CodeInvalidValue},
		{"bad base64", `{"type":"input_audio_buffer.append","audio":"!!!not base64!!!"}`, wire.CodeInvalidValue},
		{"odd pcm16", `{"type":"input_audio_buffer.append","audio":"AAAA"}`, wire.CodeInvalidValue},
		{"commit empty", `{"type":"input_audio_buffer.commit"}`, wire.CodeCommitEmpty},
		{"cancel with none", `{"type":"response.cancel"}`, wire.CodeCancelNotActive},
		{"delete unknown", `{"type":"conversation.item.delete","item_id":"item_x"}`, ""},
	}
	for _, tc := range tests {
		t.Log(tc.name)
		c.sendRaw(tc.send)
		ev := c.next()
		if ev["type"] != "error" {
			t.Fatalf("%s: got %v", tc.name, ev)
		}
		if code := ev["error"].(map[string]any)["code"]; tc.code != "" && code != tc.code {
			t.Fatalf("%s: code %v, want %s", tc.name, code, tc.code)
		}
	}
	// A short buffer is still "empty".
	c.send(appendEvent(pcm24(50, true)))
	c.send(map[string]any{"type": "input_audio_buffer.commit", "event_id": "evt_c"})
	if e := c.expectError(wire.CodeCommitEmpty); e["event_id"] != "evt_c" {
		t.Fatalf("error.event_id %v", e["event_id"])
	}
	// response.create while one is active.
	c.send(map[string]any{"type": "response.create"})
	c.until("response.content_part.added")
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("error")
	if code := evs[len(evs)-1]["error"].(map[string]any)["code"]; code != wire.CodeActiveResponse {
		t.Fatalf("second response.create: %v", code)
	}
	c.send(map[string]any{"type": "response.cancel"})
	evs = c.until("response.done")
	d := evs[len(evs)-1]["response"].(map[string]any)
	if d["status"] != "cancelled" || d["status_details"].(map[string]any)["reason"] != "client_cancelled" {
		t.Fatalf("cancelled response %v", d)
	}
	c.send(map[string]any{"type": "response.cancel"})
	c.expectError(wire.CodeCancelNotActive)
	// Still open.
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "still here"}})
	c.expect("session.updated")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func TestSessionLimitAndIdleClose(t *testing.T) {
	testkit.CheckLeaks(t)
	tests := map[string]struct {
		cfg  Config
		feed func(c *client)
	}{
		"audio limit": {Config{SessionLimit: time.Second}, func(c *client) {
			for range 11 {
				c.send(appendEvent(pcm24(100, false)))
			}
		}},
		"idle": {Config{IdleTimeout: 100 * time.Millisecond}, func(*client) {}},
		// Audio handed over in items counts too: 600 ms appended + 600 ms in an item pass 1 s.
		"audio limit, items included": {Config{SessionLimit: time.Second}, func(c *client) {
			for range 6 {
				c.send(appendEvent(pcm24(100, false)))
			}
			c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_audio", "audio": base64.StdEncoding.EncodeToString(pcm24(600, false))}}}})
			c.expect("conversation.item.added", "conversation.item.done")
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, tc.cfg)
			c := ts.open(t)
			tc.feed(c)
			c.expectError(wire.CodeSessionExpired)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _, err := c.conn.Read(ctx)
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Fatalf("close: %v, want 1001", err)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	ts := newTestServer(t, Config{MaxConversations: 3})
	resp, err := http.Get(ts.URL + "/v1/voice/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h map[string]any
	json.NewDecoder(resp.Body).Decode(&h)
	if h["ok"] != true || h["busy"] != 0.0 || h["capacity"] != 3.0 {
		t.Fatalf("health %v", h)
	}
}

func TestCutWords(t *testing.T) {
	tests := map[string]struct {
		text string
		frac float64
		want string
	}{
		"none":       {"hello world", 0, ""},
		"all":        {"hello world", 1, "hello world"},
		"mid word":   {"hello world again", 0.5, "hello"},
		"at a space": {"hello world", 5.0 / 11, "hello"},
	}
	for name, tc := range tests {
		if got := cutWords(tc.text, tc.frac); got != tc.want {
			t.Errorf("%s: %q", name, got)
		}
	}
}

func TestBudgetClosesConversation(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{},
		Budget: func(context.Context, Principal) (time.Duration, bool, error) {
			return 300 * time.Millisecond, true, nil
		}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": strings.Repeat("a long story ", 20)}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("error")
	if e := evs[len(evs)-1]["error"].(map[string]any); e["code"] != "insufficient_quota" {
		t.Fatalf("error %v", e)
	}
	var audioMs int
	for _, e := range evs {
		if e["type"] == "response.output_audio.delta" {
			audioMs += 200
		}
	}
	if audioMs > 400 {
		t.Fatalf("%d ms of audio sent on a 300 ms budget", audioMs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("close %v, want 1008", err)
	}
}

// partialFloor records what semantic_vad would read.
type partialFloor struct {
	energyDetector
	partial Partial
	seen    chan string
}

func (f *partialFloor) Feed(pcm []float32, at int64) ([]turn.Event, error) {
	if p := f.partial(); p != "" {
		select {
		case f.seen <- p:
		default:
		}
	}
	return f.energyDetector.Feed(pcm, at)
}

func TestSemanticFloorReadsPartials(t *testing.T) {
	testkit.CheckLeaks(t)
	seen := make(chan string, 1)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"so I was thinking"}, Voice: fakeVoice{},
		NewTurnDetector: func(td wire.TurnDetection, p Partial) (turn.Detector, error) {
			if td.Type != wire.TurnSemanticVAD {
				return &energyDetector{}, nil
			}
			return &partialFloor{partial: p, seen: seen}, nil
		}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "semantic_vad", "eagerness": "low"}}}}})
	c.expect("session.updated")
	for i := 0; ; i++ {
		c.send(appendEvent(pcm24(100, true)))
		select {
		case p := <-seen:
			if p != "so I was thinking" {
				t.Fatalf("partial %q", p)
			}
			c.conn.Close(websocket.StatusNormalClosure, "")
			return
		default:
		}
		if i > 300 {
			t.Fatal("the floor never read a partial transcript")
		}
	}
}

func TestOversizedAppendKeepsSession(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	c := ts.open(t)
	big := `{"type":"input_audio_buffer.append","audio":"` + strings.Repeat("A", ReadLimit) + `"}`
	c.sendRaw(big)
	c.expectError(wire.CodeInvalidValue)
	c.send(map[string]any{"type": "input_audio_buffer.clear"})
	c.expect("input_audio_buffer.cleared")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// G.711 both ways: μ-law in is heard (the floor hears it at 16 kHz), A-law out is 8 kHz bytes.
func TestG711Formats(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hi"}, Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "audio": map[string]any{
		"input":  map[string]any{"format": map[string]any{"type": "audio/pcmu"}},
		"output": map[string]any{"format": map[string]any{"type": "audio/pcma"}}}}})
	c.expect("session.updated")
	tone := make([]int16, 800) // 100 ms at 8 kHz
	for i := range tone {
		tone[i] = int16(12000 * math.Sin(2*math.Pi*300*float64(i)/8000))
	}
	loud, quiet := audio.Int16ToMulaw(tone), audio.Int16ToMulaw(make([]int16, 800))
	for range 5 {
		c.send(appendEvent(loud))
	}
	for range 3 {
		c.send(appendEvent(quiet))
	}
	evs := c.until("response.done")
	if evs[0]["type"] != "input_audio_buffer.speech_started" {
		t.Fatalf("μ-law speech not heard: %v", types(evs))
	}
	var bytes int
	for _, e := range evs {
		if e["type"] == "response.output_audio.delta" {
			b, err := base64.StdEncoding.DecodeString(e["delta"].(string))
			if err != nil {
				t.Fatal(err)
			}
			bytes += len(b)
		}
	}
	// "You said: hi." is 13 characters: 130 ms of fakeVoice audio = 1040 A-law bytes at 8 kHz.
	if bytes < 1000 || bytes > 1080 {
		t.Fatalf("A-law reply of %d bytes, want about 1040", bytes)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// A user audio item created by the client is transcribed before the mind hears it.
func TestCreatedAudioItemIsHeard(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"from an item"}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_audio", "audio": base64.StdEncoding.EncodeToString(pcm24(300, true))}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.done")
	out := evs[len(evs)-1]["response"].(map[string]any)["output"].([]any)[0].(map[string]any)
	if text := out["content"].([]any)[0].(map[string]any)["text"]; text != "You said: from an item." {
		t.Fatalf("reply %v", out)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// conversation:"none": an out-of-band response runs beside the one writing the conversation and
// leaves the conversation untouched.
func TestOutOfBandResponse(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "classify me"}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create", "response": map[string]any{"conversation": "none", "metadata": map[string]any{"topic": "x"}}})
	evs := c.until("response.done")
	for _, e := range evs {
		if strings.HasPrefix(e["type"].(string), "conversation.item.") {
			t.Fatalf("out-of-band response wrote the conversation: %v", e)
		}
	}
	done := evs[len(evs)-1]["response"].(map[string]any)
	if done["conversation_id"] != nil || done["status"] != "completed" {
		t.Fatalf("out-of-band response.done %v", done)
	}
	itemID := done["output"].([]any)[0].(map[string]any)["id"]
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": itemID})
	c.expectError(wire.CodeRetrieveInvalidItemID)
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// Audio a client hands over in conversation.item.create goes before the decoder like appended
// audio, so it is metered as heard (300 ms of it here).
func TestCreatedAudioItemIsMetered(t *testing.T) {
	testkit.CheckLeaks(t)
	meter := &recordingMeter{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"from an item"}, Meter: meter}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_audio", "audio": base64.StdEncoding.EncodeToString(pcm24(300, true))}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.conn.Close(websocket.StatusNormalClosure, "")
	ts.Wait()
	heard, _, _ := meter.total()
	if heard < 299*time.Millisecond || heard > 301*time.Millisecond {
		t.Fatalf("heard %v, want the item's 300 ms", heard)
	}
}

// slowMeter takes its time to write and notes whether the write's context was cancelled under it.
type slowMeter struct {
	mu        sync.Mutex
	cancelled int
	writes    int
}

func (m *slowMeter) Record(ctx context.Context, u Usage) error {
	select {
	case <-ctx.Done():
	case <-time.After(150 * time.Millisecond):
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if ctx.Err() != nil {
		m.cancelled++
		return ctx.Err()
	}
	return nil
}

// A meter write in flight when the conversation ends is not cancelled with it: the client leaving
// must not fail the write of what it was served (found by the soak: "meter write failed … context
// canceled" when a conversation closed during a turn-end flush).
func TestMeterWriteOutlivesTheConversation(t *testing.T) {
	testkit.CheckLeaks(t)
	meter := &slowMeter{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hi"}, Meter: meter}})
	c := ts.open(t)
	c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(pcm24(300, true))})
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.expect("input_audio_buffer.committed")
	c.conn.Close(websocket.StatusNormalClosure, "") // during the turn-end write
	ts.Wait()
	meter.mu.Lock()
	defer meter.mu.Unlock()
	if meter.writes == 0 || meter.cancelled > 0 {
		t.Fatalf("%d meter writes, %d of them cancelled by the conversation's end", meter.writes, meter.cancelled)
	}
}

// server_vad's idle_timeout_ms: the clock starts where the last response's audio ends (its
// response.done plus the audio it spoke) and runs on the audio timeline; when it passes with no
// speech, input_audio_buffer.timeout_triggered, the quiet audio committed, and a response.
func TestIdleTimeoutTriggered(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "server_vad", "idle_timeout_ms": 500}}}}})
	c.expect("session.updated")
	silence := func(n int) {
		for range n {
			c.send(appendEvent(pcm24(100, false)))
		}
	}
	marker := func() []map[string]any { // every event the server sent before this point
		c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": "item_marker"})
		return c.until("error")
	}
	// Not armed before any response: a second of silence triggers nothing.
	silence(10)
	if evs := marker(); strings.Contains(fmt.Sprint(types(evs)), "timeout_triggered") {
		t.Fatalf("idle timeout before any response: %v", types(evs))
	}
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello"}}}})
	c.send(map[string]any{"type": "response.create"})
	c.until("response.done")
	// "You said: hello." plays for 160 ms, then 500 ms of silence: 600 ms appended is not enough.
	silence(6)
	if evs := marker(); strings.Contains(fmt.Sprint(types(evs)), "timeout_triggered") {
		t.Fatalf("idle timeout before 160 ms of playback + 500 ms: %v", types(evs))
	}
	silence(1)
	evs := c.until("response.created")
	got := fmt.Sprint(types(evs))
	if !strings.Contains(got, "input_audio_buffer.timeout_triggered") || !strings.Contains(got, "input_audio_buffer.committed") {
		t.Fatalf("after 700 ms: %v", got)
	}
	for _, e := range evs {
		if e["type"] == "input_audio_buffer.timeout_triggered" {
			if d := e["audio_end_ms"].(float64) - e["audio_start_ms"].(float64); d < 500 {
				t.Errorf("timeout_triggered spans %v ms, want ≥ 500", d)
			}
		}
	}
	c.until("response.done")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// With input transcription on, the user's words stream as
// conversation.item.input_audio_transcription.delta for the turn's item while they still speak
// (before speech_stopped), from the partial decodes; .completed still carries the final text.
func TestTranscriptionDeltasWhileSpeaking(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hello there"}, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"transcription": map[string]any{"model": "whisper-1"},
			"turn_detection": map[string]any{"type": "server_vad", "create_response": false}}}}})
	c.expect("session.updated")
	for range 8 { // 800 ms of speech, no pause: the turn is still open
		c.send(appendEvent(pcm24(100, true)))
	}
	evs := c.until("conversation.item.input_audio_transcription.delta")
	var item string
	for _, e := range evs {
		switch e["type"] {
		case "input_audio_buffer.speech_started":
			item = e["item_id"].(string)
		case "input_audio_buffer.speech_stopped":
			t.Fatalf("the turn ended before any delta: %v", types(evs))
		}
	}
	delta := evs[len(evs)-1]
	if delta["item_id"] != item || delta["delta"] != "hello there" {
		t.Fatalf("delta %v, want item %s and the partial's words", delta, item)
	}
	for range 4 {
		c.send(appendEvent(pcm24(100, false)))
	}
	evs = c.until("conversation.item.input_audio_transcription.completed")
	if done := evs[len(evs)-1]; done["item_id"] != item || done["transcript"] != "hello there" {
		t.Fatalf("completed %v", done)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// TestPlainGetKeepsTicket: a GET or HEAD on a socket route that is not a WebSocket handshake (a
// link previewer fetching the URL) is refused websocket_upgrade_required before admission, and the
// ticket in its URL still opens the socket after.
func TestPlainGetKeepsTicket(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	for _, path := range []string{"/v1/voice", "/v1/realtime"} {
		tk := ts.ticket(t)
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			req, _ := http.NewRequest(method, ts.URL+path+"?ticket="+tk, nil)
			req.Header.Set("Connection", "Upgrade") // half a handshake: no Upgrade, no key
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" {
				t.Errorf("%s %s: %d Upgrade=%q, want 426 naming websocket", method, path, resp.StatusCode, resp.Header.Get("Upgrade"))
			}
			if method == http.MethodGet && !strings.Contains(string(b), `"websocket_upgrade_required"`) {
				t.Errorf("%s %s: body %s, want websocket_upgrade_required", method, path, b)
			}
		}
		c, _, err := ts.dial(t, path+"?ticket="+tk, nil)
		if err != nil {
			t.Fatalf("%s: the ticket did not open a socket after a plain GET and HEAD: %v", path, err)
		}
		c.expect("session.created")
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// TestJWTNotInQuery: a principal JWT in ?ticket= is refused by name without being verified (a
// URL lands in logs); the same JWT opens a socket from Authorization and from the subprotocol.
func TestJWTNotInQuery(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	jwt := token(t, ts.clock, nil)
	for _, path := range []string{"/v1/voice?ticket=", "/v1/realtime?model=m&ticket="} {
		_, resp, err := ts.dial(t, path+jwt, nil)
		assertRefused(t, resp, err, 401, "credential_not_a_ticket")
		_, resp, err = ts.dial(t, path+"not-a-ticket", nil)
		assertRefused(t, resp, err, 401, "credential_not_a_ticket")
	}
	for name, opts := range map[string]*websocket.DialOptions{
		"authorization": {HTTPHeader: http.Header{"Authorization": {"Bearer " + jwt}}},
		"subprotocol":   {Subprotocols: []string{"realtime", "openai-insecure-api-key." + jwt}},
	} {
		c, _, err := ts.dial(t, "/v1/realtime?model=m", opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.expect("session.created")
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// TestClientFailureIsAWarning: a conversation that cannot start because of what its client sent
// (a ticket carrying a session object that does not apply) is refused by name and logged at WARN,
// not ERROR: a client can fill an operator's error log at will otherwise.
func TestClientFailureIsAWarning(t *testing.T) {
	testkit.CheckLeaks(t)
	logs := &testkit.LogBuffer{}
	ts := newTestServer(t, Config{Log: slog.New(slog.NewTextHandler(logs, nil))})
	tk := NewTicket()
	if err := ts.cfg.Tickets.Put(context.Background(), tk, Grant{Principal: Principal{Subject: "ann"},
		Session: json.RawMessage(`{"input_audio_format":"mp3"}`)}, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	c, _, err := ts.dial(t, "/v1/voice?ticket="+tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := c.next()
	if ev["type"] != "error" || ev["error"].(map[string]any)["type"] != "invalid_request_error" {
		t.Fatalf("first event %v, want an invalid_request_error", ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for { // through to the close
		if _, _, err := c.conn.Read(ctx); err != nil {
			break
		}
	}
	ts.Wait()
	out := logs.String()
	if strings.Contains(out, "level=ERROR") || !strings.Contains(out, "level=WARN") {
		t.Errorf("a client's bad session logged:\n%s\nwant WARN, no ERROR", out)
	}
}
