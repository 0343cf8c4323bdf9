package session

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// standIn is an OpenAI-compatible chat-completions server standing in for the mind's model (issue
// 23): it hands each request's body to the test, answers with words, ends with finish, and sends
// a usage chunk when the request asks for one; with refuseImages it answers 400 to a request
// carrying an image part, as a text-only model's server does.
type standIn struct {
	words        []string
	finish       string
	usage        map[string]any
	refuseImages bool
	refuseAudio  bool // 400 to a request carrying an input_audio part (issue 27)
	bodies       chan map[string]any
}

func newStandIn(t *testing.T, s *standIn) mind.Mind {
	t.Helper()
	if s.finish == "" {
		s.finish = "stop"
	}
	s.bodies = make(chan map[string]any, 64)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: srv.URL + "/v1", Model: "stand-in", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.bodies <- body
	if s.refuseAudio && strings.Contains(fmt.Sprint(body["messages"]), "input_audio") {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"this model does not support audio input"}}`)
		return
	}
	if s.refuseImages && strings.Contains(fmt.Sprint(body["messages"]), "image_url") {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"this model does not support image input"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	for _, word := range s.words {
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}}}})
	}
	chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": s.finish}}})
	if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true && s.usage != nil {
		chunk(map[string]any{"choices": []any{}, "usage": s.usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *standIn) body(t *testing.T) map[string]any {
	t.Helper()
	select {
	case b := <-s.bodies:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("the mind was not asked within 10 s")
		return nil
	}
}

func userText(text string) map[string]any {
	return map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": text}}}}
}

// LiveKit's generateReply sends response.create with metadata.client_event_id and waits for it in
// response.created; response.done carries it too. Both dialects.
func TestResponseMetadataRoundTrips(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	for _, beta := range []bool{false, true} {
		var c *client
		if beta {
			var err error
			c, _, err = ts.dial(t, "/v1/realtime?model=m", &websocket.DialOptions{
				HTTPHeader: http.Header{"Authorization": {"Bearer " + ts.ticket(t)}, "OpenAI-Beta": {"realtime=v1"}}})
			if err != nil {
				t.Fatal(err)
			}
			c.expect("session.created")
		} else {
			c = ts.open(t)
		}
		c.send(map[string]any{"type": "response.create", "event_id": "response_create_abc",
			"response": map[string]any{"instructions": "Greet.", "metadata": map[string]any{"client_event_id": "response_create_abc"}}})
		evs := c.until("response.done")
		var created map[string]any
		for _, e := range evs {
			if e["type"] == "response.created" {
				created = e["response"].(map[string]any)
			}
		}
		done := evs[len(evs)-1]["response"].(map[string]any)
		for name, r := range map[string]map[string]any{"response.created": created, "response.done": done} {
			md, _ := r["metadata"].(map[string]any)
			if md["client_event_id"] != "response_create_abc" {
				t.Errorf("beta %v: %s metadata %v", beta, name, r["metadata"])
			}
		}
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// temperature, max_output_tokens and parallel_tool_calls reach the mind's request, session-wide
// and overridden per response; the request asks the stream for its usage.
func TestModelParametersReachMind(t *testing.T) {
	testkit.CheckLeaks(t)
	s := &standIn{words: []string{"Fine."}}
	ts := newTestServer(t, Config{Engines: Engines{Mind: newStandIn(t, s)}})
	c, _, err := ts.dial(t, "/v1/realtime?model=m", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + ts.ticket(t)}, "OpenAI-Beta": {"realtime=v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	c.expect("session.created")
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"modalities": []string{"text"}, "temperature": 0.7,
		"max_response_output_tokens": 50, "parallel_tool_calls": false, "turn_detection": nil,
		"tools": []any{map[string]any{"type": "function", "name": "f", "parameters": map[string]any{"type": "object"}}}}})
	c.expect("session.updated")
	c.send(userText("hello"))
	c.expect("conversation.item.created")
	c.send(map[string]any{"type": "response.create"})
	b := s.body(t)
	if b["temperature"] != 0.7 || b["max_tokens"] != 50.0 || b["parallel_tool_calls"] != false {
		t.Errorf("session parameters: temperature %v max_tokens %v parallel_tool_calls %v", b["temperature"], b["max_tokens"], b["parallel_tool_calls"])
	}
	if opts, _ := b["stream_options"].(map[string]any); opts["include_usage"] != true {
		t.Errorf("stream_options %v", b["stream_options"])
	}
	c.until("response.done")
	c.send(map[string]any{"type": "response.create", "response": map[string]any{"temperature": 1.0, "max_output_tokens": 7, "parallel_tool_calls": true}})
	b = s.body(t)
	if b["temperature"] != 1.0 || b["max_tokens"] != 7.0 || b["parallel_tool_calls"] != true {
		t.Errorf("response overrides: temperature %v max_tokens %v parallel_tool_calls %v", b["temperature"], b["max_tokens"], b["parallel_tool_calls"])
	}
	c.until("response.done")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// A reply the mind cut at the token limit ends incomplete, reason max_output_tokens; what was
// spoken stays on the item and is billed; the mind's usage is the response's.
func TestMaxOutputTokensEndsIncompleteWithUsage(t *testing.T) {
	testkit.CheckLeaks(t)
	s := &standIn{words: []string{"Once upon ", "a time."}, finish: "length",
		usage: map[string]any{"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168, "prompt_tokens_details": map[string]any{"cached_tokens": 100}}}
	meter := &recordingMeter{}
	ts := newTestServer(t, Config{Engines: Engines{Mind: newStandIn(t, s), Voice: fakeVoice{}, Meter: meter}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "max_output_tokens": 5}})
	c.expect("session.updated")
	c.send(userText("tell me a story"))
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	if b := s.body(t); b["max_tokens"] != 5.0 {
		t.Errorf("max_tokens %v", b["max_tokens"])
	}
	evs := c.until("response.done")
	done := evs[len(evs)-1]["response"].(map[string]any)
	details, _ := done["status_details"].(map[string]any)
	if done["status"] != "incomplete" || details["type"] != "incomplete" || details["reason"] != "max_output_tokens" {
		t.Fatalf("response.done %v %v", done["status"], done["status_details"])
	}
	item := done["output"].([]any)[0].(map[string]any)
	part := item["content"].([]any)[0].(map[string]any)
	if item["status"] != "incomplete" || part["transcript"] != "Once upon a time." {
		t.Errorf("item %v", item)
	}
	u := done["usage"].(map[string]any)
	in := u["input_token_details"].(map[string]any)
	if u["input_tokens"] != 123.0 || u["output_tokens"] != 45.0 || u["total_tokens"] != 168.0 || in["text_tokens"] != 123.0 ||
		in["cached_tokens"] != 100.0 || u["output_token_details"].(map[string]any)["text_tokens"] != 45.0 {
		t.Errorf("usage %v", u)
	}
	if sec, _ := u["spoken_seconds"].(float64); sec <= 0 {
		t.Errorf("spoken_seconds %v: the spoken part is billed", u["spoken_seconds"])
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	ts.Wait()
	if _, spoken, _ := meter.total(); spoken <= 0 {
		t.Errorf("metered spoken %v", spoken)
	}
}

// An input_image reaches the mind as an image part beside the message's text; a mind whose server
// refuses images fails the response with a named error, not silence.
func TestImageReachesMind(t *testing.T) {
	testkit.CheckLeaks(t)
	const url = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	for _, refuse := range []bool{false, true} {
		s := &standIn{words: []string{"A dot."}, refuseImages: refuse}
		ts := newTestServer(t, Config{Engines: Engines{Mind: newStandIn(t, s)}})
		c := ts.open(t)
		c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": "What is this?"},
				map[string]any{"type": "input_image", "image_url": url, "detail": "low"}}}})
		c.expect("conversation.item.added", "conversation.item.done")
		c.send(map[string]any{"type": "response.create", "response": map[string]any{"output_modalities": []string{"text"}}})
		msgs := s.body(t)["messages"].([]any)
		content, ok := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
		if !ok || len(content) != 2 {
			t.Fatalf("last message %v", msgs[len(msgs)-1])
		}
		text, img := content[0].(map[string]any), content[1].(map[string]any)
		iu, _ := img["image_url"].(map[string]any)
		if text["type"] != "text" || text["text"] != "What is this?" || img["type"] != "image_url" || iu["url"] != url || iu["detail"] != "low" {
			t.Errorf("parts %v", content)
		}
		evs := c.until("response.done")
		done := evs[len(evs)-1]["response"].(map[string]any)
		if !refuse {
			if done["status"] != "completed" {
				t.Errorf("done %v", done)
			}
		} else {
			var code any
			for _, e := range evs {
				if e["type"] == "error" {
					code = e["error"].(map[string]any)["code"]
				}
			}
			if done["status"] != "failed" || code != codeImagesRefused {
				t.Errorf("refused images: status %v, error code %v", done["status"], code)
			}
		}
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// A long conversation (hundreds of turns) is shown to the mind within its budget, newest turns
// first kept, starting at a user turn; the client's conversation keeps every item; retention_ratio
// keeps the view's start from one reply to the next; disabled shows everything.
func TestLongHistoryBoundedForMind(t *testing.T) {
	testkit.CheckLeaks(t)
	s := &standIn{words: []string{"Ok."}}
	const budget = 400
	ts := newTestServer(t, Config{EventRate: -1, MindContextTokens: budget, Engines: Engines{Mind: newStandIn(t, s)}})
	c := ts.open(t)
	const turns = 300
	var firstID string
	for i := range turns {
		c.send(userText(fmt.Sprintf("turn %d: %s", i, strings.Repeat("words ", 10))))
		ev := c.expect("conversation.item.added", "conversation.item.done")[0]
		if i == 0 {
			firstID = ev["item"].(map[string]any)["id"].(string)
		}
	}
	view := func() []any {
		c.send(map[string]any{"type": "response.create", "response": map[string]any{"output_modalities": []string{"text"}}})
		msgs := s.body(t)["messages"].([]any)
		c.until("response.done")
		return msgs
	}
	check := func(msgs []any, last string) {
		t.Helper()
		chars := 0
		for _, m := range msgs {
			chars += len(fmt.Sprint(m.(map[string]any)["content"]))
		}
		if chars/bytesPerToken > budget {
			t.Errorf("%d messages, ~%d tokens: over the budget %d", len(msgs), chars/bytesPerToken, budget)
		}
		if first := msgs[0].(map[string]any); first["role"] != "user" {
			t.Errorf("the view starts with %v", first)
		}
		if got := fmt.Sprint(msgs[len(msgs)-1].(map[string]any)["content"]); !strings.HasPrefix(got, last) {
			t.Errorf("newest message %q, want %q", got, last)
		}
	}
	msgs := view()
	check(msgs, fmt.Sprintf("turn %d:", turns-1))
	if len(msgs) < 10 {
		t.Errorf("only %d messages shown of a %d-token budget", len(msgs), budget)
	}
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": firstID})
	if ev := c.expect("conversation.item.retrieved")[0]; ev["item"].(map[string]any)["id"] != firstID {
		t.Errorf("the client's first item is gone: %v", ev)
	}

	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"truncation": map[string]any{"type": "retention_ratio", "retention_ratio": 0.5}}})
	c.expect("session.updated")
	c.send(userText("retained one"))
	c.expect("conversation.item.added", "conversation.item.done")
	a := view()
	check(a, "retained one")
	c.send(userText("retained two"))
	c.expect("conversation.item.added", "conversation.item.done")
	b := view()
	check(b, "retained two")
	if fmt.Sprint(a[0]) != fmt.Sprint(b[0]) {
		t.Errorf("retention_ratio moved the view's start: %v then %v", a[0], b[0])
	}

	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "truncation": "disabled"}})
	c.expect("session.updated")
	if all := view(); len(all) < turns+4 { // 300 user turns, the replies so far, the two retained turns
		t.Errorf("disabled: %d messages, want every item", len(all))
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// The window unit: 400 generated turns (a 60-minute conversation and more) against a budget.
func TestMindWindowView(t *testing.T) {
	var items []wire.Item
	for i := range 400 {
		text := fmt.Sprintf("user turn %d %s", i, strings.Repeat("x", 80))
		items = append(items, wire.Item{ID: fmt.Sprintf("u%d", i), Type: wire.ItemMessage, Role: wire.RoleUser,
			Content: []wire.ContentPart{{Type: wire.InputText, Text: text}}})
		if i%5 == 0 {
			items = append(items, wire.Item{ID: fmt.Sprintf("c%d", i), Type: wire.ItemFunctionCall, CallID: "x", Name: "f", Arguments: "{}"},
				wire.Item{ID: fmt.Sprintf("o%d", i), Type: wire.ItemFunctionCallOutput, CallID: "x", Output: "42"})
		}
		items = append(items, wire.Item{ID: fmt.Sprintf("a%d", i), Type: wire.ItemMessage, Role: wire.RoleAssistant,
			Content: []wire.ContentPart{{Type: wire.OutputText, Text: "ok " + strings.Repeat("y", 40)}}})
	}
	cost := func(v []wire.Item) int {
		n := 0
		for _, it := range v {
			n += itemTokens(it)
		}
		return n
	}
	var w mindWindow
	v := w.view(items, wire.Truncation{}, 1000)
	if cost(v) > 1000 || v[0].Role != wire.RoleUser || v[len(v)-1].ID != "a399" || cost(v) < 900 {
		t.Fatalf("auto: %d items, cost %d, from %s", len(v), cost(v), v[0].ID)
	}
	var r mindWindow
	tr := wire.Truncation{Type: wire.TruncationRetentionRatio, RetentionRatio: 0.5}
	first := r.view(items[:600], tr, 1000)
	if cost(first) > 500 {
		t.Fatalf("retention 0.5 kept %d", cost(first))
	}
	starts := map[string]bool{}
	for n := 602; n <= len(items); n += 2 {
		starts[r.view(items[:n], tr, 1000)[0].ID] = true
	}
	if len(starts) > len(items)/40 {
		t.Errorf("retention_ratio moved the start %d times over %d items", len(starts), len(items)-600)
	}
	if got := (&mindWindow{}).view(items, wire.Truncation{Type: wire.TruncationDisabled}, 1000); len(got) != len(items) {
		t.Errorf("disabled: %d of %d", len(got), len(items))
	}
	if got := (&mindWindow{}).view(items, wire.Truncation{PostInstructions: 200}, 1000); cost(got) > 200 {
		t.Errorf("post_instructions 200: %d", cost(got))
	}
	huge := append(items[:2:2], wire.Item{ID: "big", Type: wire.ItemMessage, Role: wire.RoleUser,
		Content: []wire.ContentPart{{Type: wire.InputText, Text: strings.Repeat("z", 100000)}}})
	if got := (&mindWindow{}).view(huge, wire.Truncation{}, 1000); len(got) != 1 || got[0].ID != "big" {
		t.Errorf("a newest turn over the budget is still shown alone: %v", len(got))
	}
}

// BenchmarkMindWindowView: the window's cost per reply on a long conversation (1200 items, the
// start kept from the previous reply).
func BenchmarkMindWindowView(b *testing.B) {
	var items []wire.Item
	for i := range 600 {
		items = append(items,
			wire.Item{ID: fmt.Sprintf("u%d", i), Type: wire.ItemMessage, Role: wire.RoleUser, Content: []wire.ContentPart{{Type: wire.InputText, Text: strings.Repeat("x", 120)}}},
			wire.Item{ID: fmt.Sprintf("a%d", i), Type: wire.ItemMessage, Role: wire.RoleAssistant, Content: []wire.ContentPart{{Type: wire.OutputText, Text: strings.Repeat("y", 200)}}})
	}
	var w mindWindow
	tr := wire.Truncation{Type: wire.TruncationRetentionRatio, RetentionRatio: 0.6}
	for b.Loop() {
		w.view(items, tr, DefaultMindContextTokens)
	}
}
