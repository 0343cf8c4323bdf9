package speechdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/speechcore/squelch"
)

type transcriptClient struct {
	t   *testing.T
	url string
}

func (c transcriptClient) do(method, path string, body []byte) (int, map[string]any) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, m
}

func (c transcriptClient) open() string {
	c.t.Helper()
	status, m := c.do("POST", "/v1/audio/transcript", nil)
	id, _ := m["id"].(string)
	if status != http.StatusCreated || id == "" {
		c.t.Fatalf("open: %d %v", status, m)
	}
	return id
}

// TestTranscriptPushesAndClose pushes real speech (Silero opens on speech, not on the codec's
// tones) in 250 ms pushes. Each ack bills what a squelch with the same settings admits; the
// close answers the utterances, each decoded on its own, as the fixture Whisper reads them.
func TestTranscriptPushesAndClose(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := transcriptClient{t: t, url: h.srv.URL}
	speech := realSpeech(t)
	ref, err := squelch.New(squelch.Config{Model: h.svc.speech.Silero})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()

	id := c.open()
	var utterances [][]float32
	var current []float32
	var billed, wantBilled float64
	const push = audio.WhisperSampleRate / 4
	for i := 0; i+push <= len(speech); i += push {
		chunk := speech[i : i+push]
		admitted, err := ref.Push(chunk)
		if err != nil {
			t.Fatal(err)
		}
		if len(admitted) > 0 {
			current = append(current, admitted...)
		} else if current != nil {
			utterances = append(utterances, current)
			current = nil
		}
		status, ack := c.do("POST", "/v1/audio/transcript/"+id, audio.Float32ToPCM16(chunk))
		if status != 200 {
			t.Fatalf("push %d: %d %v", i/push, status, ack)
		}
		if _, ok := ack["text"].(string); !ok {
			t.Fatalf("ack without text: %v", ack)
		}
		got, want := ack["duration"].(float64), squelch.Seconds(len(admitted))
		if got != want {
			t.Errorf("push %d billed %g s, want %g (what the squelch admits)", i/push, got, want)
		}
		billed += got
		wantBilled += want
	}
	if current != nil {
		utterances = append(utterances, current)
	}
	if len(utterances) < 2 || billed <= 0 || billed >= float64(len(speech))/audio.WhisperSampleRate+1 {
		t.Fatalf("%d utterances, %g s billed of %g s pushed", len(utterances), billed, float64(len(speech))/16000)
	}
	var want []string
	for _, u := range utterances {
		res, err := h.svc.speech.Whisper.Transcribe(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSpace(res.Text); s != "" {
			want = append(want, s)
		}
	}
	// Behind the acks, the first utterance is committed (a second of later speech follows its
	// pause) and its audio freed: the window holds only what came after it.
	tr := h.transcript(id)
	later := 0
	for _, u := range utterances[1:] {
		later += len(u)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		tr.mu.Lock()
		committed, window := len(tr.committed), len(tr.window)
		tr.mu.Unlock()
		if committed >= 1 && window == later {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not committed: %d pieces, window %d samples (want %d after the first utterance)", committed, window, later)
		}
		time.Sleep(5 * time.Millisecond)
	}
	status, done := c.do("DELETE", "/v1/audio/transcript/"+id, nil)
	if status != 200 || done["text"] != strings.Join(want, " ") || done["duration"] != 0.0 {
		t.Fatalf("close: %d %v, want text %q", status, done, strings.Join(want, " "))
	}

	// The transcript is gone, by name.
	for _, method := range []string{"POST", "DELETE"} {
		status, e := c.do(method, "/v1/audio/transcript/"+id, audio.Float32ToPCM16(speech[:push]))
		if status != http.StatusConflict || e["name"] != "transcript_closed" {
			t.Errorf("%s after close: %d %v", method, status, e)
		}
	}
}

func TestTranscriptRefusals(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	h.transcripts.Limit = time.Second
	c := transcriptClient{t: t, url: h.srv.URL}
	id := c.open()
	half := make([]byte, audio.WhisperSampleRate) // 0.5 s of silence
	tests := []struct {
		name   string
		method string
		path   string
		body   []byte
		status int
		error  string
	}{
		{"unknown id", "POST", "/v1/audio/transcript/tr_nope", half, 404, "transcript_not_found"},
		{"unknown id, close", "DELETE", "/v1/audio/transcript/tr_nope", nil, 404, "transcript_not_found"},
		{"odd-length PCM", "POST", "/v1/audio/transcript/" + id, []byte{1, 2, 3}, 400, "odd_length_pcm"},
		{"push over 4 MiB", "POST", "/v1/audio/transcript/" + id, make([]byte, FrameLimit+2), 413, "frame_too_large"},
		{"first half second", "POST", "/v1/audio/transcript/" + id, half, 200, ""},
		{"second half second", "POST", "/v1/audio/transcript/" + id, half, 200, ""},
		{"past the limit", "POST", "/v1/audio/transcript/" + id, half, 413, "transcript_limit_reached"},
		{"close still answers", "DELETE", "/v1/audio/transcript/" + id, nil, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, m := c.do(tc.method, tc.path, tc.body)
			if status != tc.status || (tc.error != "" && (m["name"] != tc.error || m["message"] == "")) {
				t.Fatalf("%d %v, want %d %s", status, m, tc.status, tc.error)
			}
			if tc.error == "" && m["duration"] != 0.0 { // silence is not billed
				t.Fatalf("silence billed: %v", m)
			}
		})
	}
}

func TestTranscriptIdleReaped(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	h.transcripts.Idle = time.Nanosecond
	c := transcriptClient{t: t, url: h.srv.URL}
	id := c.open()
	h.transcripts.mu.Lock()
	h.transcripts.lastSweep = time.Time{} // the next request sweeps
	h.transcripts.mu.Unlock()
	status, m := c.do("POST", "/v1/audio/transcript/"+id, make([]byte, 320))
	if status != http.StatusGone || m["name"] != "transcript_expired" {
		t.Fatalf("push to an idle transcript: %d %v", status, m)
	}
}

func TestQuietestCut(t *testing.T) {
	pcm := make([]float32, 10*audio.WhisperSampleRate)
	for i := range pcm {
		pcm[i] = 0.5
	}
	quiet := 7*audio.WhisperSampleRate + 320*3
	for i := quiet; i < quiet+320; i++ {
		pcm[i] = 0
	}
	if got := quietestCut(pcm, 9*audio.WhisperSampleRate); got != quiet {
		t.Fatalf("cut at %d, want %d", got, quiet)
	}
}

// Transcripts open at once are capped: each holds a squelch, a worker and its window, and all
// come in under the service token (issue 18, the raw doors' hunt: they were unbounded).
func TestTranscriptOpenCap(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	h.transcripts.MaxOpen = 2
	c := transcriptClient{t: t, url: h.srv.URL}
	first := c.open()
	c.open()
	status, m := c.do("POST", "/v1/audio/transcript", nil)
	if status != http.StatusTooManyRequests || m["name"] != "too_many_transcripts" {
		t.Fatalf("third open: %d %v, want 429 too_many_transcripts", status, m)
	}
	if status, m := c.do("DELETE", "/v1/audio/transcript/"+first, nil); status != http.StatusOK {
		t.Fatalf("close: %d %v", status, m)
	}
	c.open() // a closed one frees its place
}

// A client pushing far faster than the decoder is told to wait instead of piling audio up: a
// push is refused while 30 s of admitted audio waits uncommitted (it was unbounded up to the
// 600 s limit: 38 MB a transcript).
func TestTranscriptPushRefusedWhileBehind(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := transcriptClient{t: t, url: h.srv.URL}
	id := c.open()
	tr := h.transcript(id)
	tr.mu.Lock()
	tr.window = make([]float32, 30*audio.WhisperSampleRate) // the decoder has not caught up
	tr.mu.Unlock()
	status, m := c.do("POST", "/v1/audio/transcript/"+id, make([]byte, 3200))
	if status != http.StatusTooManyRequests || m["name"] != "transcript_behind" {
		t.Fatalf("push while 30 s waits: %d %v, want 429 transcript_behind", status, m)
	}
}

// stalledPush starts a push whose body stops after its first 3200 bytes (a client trickling a
// large push, or one that hangs), declaring size bytes (-1: chunked). release sends the rest and
// returns the push's answer.
func stalledPush(t *testing.T, url string, size int64) (release func() (int, map[string]any)) {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", url, pr)
	req.ContentLength = size
	type answer struct {
		status int
		m      map[string]any
	}
	got := make(chan answer, 1)
	t.Cleanup(func() { pw.CloseWithError(errors.New("the test is over")) }) // a failed test must not hang the server's Close
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		got <- answer{resp.StatusCode, m}
	}()
	if _, err := pw.Write(make([]byte, 3200)); err != nil {
		t.Fatal(err)
	}
	return func() (int, map[string]any) {
		rest := int64(3200)
		if size > 3200 {
			rest = size - 3200
		}
		pw.Write(make([]byte, rest))
		pw.Close()
		a := <-got
		return a.status, a.m
	}
}

// waitFor polls cond (the server's state) until it holds, failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Pushes to one transcript are taken one at a time (issue 18 hunt): a second push while one is
// still being read is refused transcript_busy before its body is read. Before, every concurrent
// push read its body (up to 4 MiB) and made its samples (8 MiB more) while it queued for the
// transcript's lock.
func TestTranscriptOnePushAtATime(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := transcriptClient{t: t, url: h.srv.URL}
	id := c.open()
	tr := h.transcript(id)

	release := stalledPush(t, h.srv.URL+"/v1/audio/transcript/"+id, -1)
	waitFor(t, "the first push to be taking", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.taking
	})
	status, m := c.do("POST", "/v1/audio/transcript/"+id, make([]byte, 3200))
	if status != http.StatusConflict || m["name"] != "transcript_busy" || m["message"] == "" {
		t.Fatalf("a second push while the first is read: %d %v, want 409 transcript_busy", status, m)
	}
	if status, m := release(); status != http.StatusOK {
		t.Fatalf("the first push: %d %v", status, m)
	}
	if status, m := c.do("POST", "/v1/audio/transcript/"+id, make([]byte, 3200)); status != http.StatusOK {
		t.Fatalf("a push after the first was answered: %d %v", status, m)
	}
}

// The node takes at most PushBytes of push bodies at once, counted before they are read:
// declared lengths whole, chunked bodies as they arrive; a push that does not fit is refused
// transcript_pushes_full (429, Retry-After) and the budget comes back when a push is answered.
func TestTranscriptPushBudget(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	const budget = transcriptReadStep + 4096
	h.transcripts.PushBytes = budget
	c := transcriptClient{t: t, url: h.srv.URL}
	a, b := c.open(), c.open()
	taken := func(n int64) func() bool {
		return func() bool {
			h.transcripts.mu.Lock()
			defer h.transcripts.mu.Unlock()
			return h.transcripts.pushing == n
		}
	}

	release := stalledPush(t, h.srv.URL+"/v1/audio/transcript/"+a, budget)
	waitFor(t, "the declared push to take the budget", taken(budget))
	status, m := c.do("POST", "/v1/audio/transcript/"+b, make([]byte, 3200))
	if status != http.StatusTooManyRequests || m["name"] != "transcript_pushes_full" {
		t.Fatalf("a push while the budget is taken: %d %v, want 429 transcript_pushes_full", status, m)
	}
	if status, m := release(); status != http.StatusOK {
		t.Fatalf("the declared push: %d %v", status, m)
	}
	waitFor(t, "the budget to come back", taken(0))

	// A chunked push takes its bytes as they arrive: 3200 bytes in, one step is taken.
	release = stalledPush(t, h.srv.URL+"/v1/audio/transcript/"+a, -1)
	waitFor(t, "the chunked push to take a step", taken(transcriptReadStep))
	if status, m := c.do("POST", "/v1/audio/transcript/"+b, make([]byte, 6400)); status != http.StatusTooManyRequests {
		t.Fatalf("a push over what is left: %d %v, want 429", status, m)
	}
	if status, m := c.do("POST", "/v1/audio/transcript/"+b, make([]byte, 3200)); status != http.StatusOK {
		t.Fatalf("a push within what is left: %d %v", status, m)
	}
	if status, m := release(); status != http.StatusOK {
		t.Fatalf("the chunked push: %d %v", status, m)
	}
	waitFor(t, "the budget to come back", taken(0))
}

// A chunked push (no declared length) over 4 MiB is refused as a declared one is, by the bytes
// read: frame_too_large, and the budget it took comes back.
func TestTranscriptChunkedPushTooLarge(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := transcriptClient{t: t, url: h.srv.URL}
	id := c.open()
	req, _ := http.NewRequest("POST", h.srv.URL+"/v1/audio/transcript/"+id, io.LimitReader(zeros{}, FrameLimit+2))
	req.ContentLength = -1 // chunked
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	if msg, _ := m["message"].(string); resp.StatusCode != http.StatusRequestEntityTooLarge || m["name"] != "frame_too_large" || !strings.Contains(msg, "push may carry at most 4 MiB") {
		t.Fatalf("a chunked push over 4 MiB: %d %v, want 413 frame_too_large naming the push bound", resp.StatusCode, m)
	}
	waitFor(t, "the push budget to come back", func() bool {
		h.transcripts.mu.Lock()
		defer h.transcripts.mu.Unlock()
		return h.transcripts.pushing == 0
	})
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
