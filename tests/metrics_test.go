package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricsOf reads GET /metrics (service token) into series → value; histograms appear as their
// _count and _sum series.
func (s *server) metricsOf(t testing.TB) map[string]float64 {
	t.Helper()
	code, body := s.do("GET", "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsMove: a synthesis (WS and HTTP), a transcription, a server_vad conversation turn and
// a request with a wrong token each move their series on GET /metrics; the raw doors' seconds
// land in /v1/usage under the service principal.
func TestMetricsMove(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})

	synthesizeWS(t, s, roundTripSentence)
	body, _ := json.Marshal(map[string]any{"input": roundTripSentence, "voice": "alloy", "response_format": "wav"})
	code, wav := s.do("POST", "/v1/audio/speech", "application/json", bytes.NewReader(body))
	if code != http.StatusOK {
		t.Fatalf("speech: %d %s", code, wav)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "speech.wav")
	fw.Write(wav)
	mw.Close()
	if code, out := s.do("POST", "/v1/audio/transcriptions", mw.FormDataContentType(), &form); code != http.StatusOK {
		t.Fatalf("transcriptions: %d %s", code, out)
	}

	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("metered", "")), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(serverVAD()))
	c.until("session.updated", nil)
	c.appendAudio(append(append(silence24k(0.5), espeakSpeech(t, "What is the weather like today?")...), silence24k(1.5)...))
	c.untilCompleted()
	open := s.metricsOf(t) // the conversation is still open here
	c.close()

	req, _ := http.NewRequest("GET", s.Base+"/v1/speech/health", nil)
	req.Header.Set("Authorization", "Bearer not-the-token")
	if resp, err := s.Client.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	if v := open[`voiced_sessions_open{door="realtime",kind="conversation"}`]; v != 1 {
		t.Errorf("voiced_sessions_open{realtime} = %v during the conversation, want 1", v)
	}
	// The conversation's seconds reach the meter when its turn ends and when it closes, on the
	// session's meter goroutine, not before response.done or the close reach the client: poll.
	got := s.metricsOf(t)
	for deadline := time.Now().Add(10 * time.Second); got[`voiced_spoken_seconds_total{door="conversation"}`] <= 0 ||
		got[`voiced_heard_seconds_total{door="conversation"}`] <= 0; {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the server's counters, not synchronising
		got = s.metricsOf(t)
	}
	for _, series := range []string{
		`voiced_synthesize_first_frame_seconds_count{door="synthesize"}`,
		`voiced_kokoro_pass_seconds_count`,
		`voiced_whisper_decode_seconds_count`,
		`voiced_whisper_model_seconds_count`,
		`voiced_whisper_encode_seconds_count`,
		`voiced_conversation_turn_wait_seconds_count`,
		`voiced_conversation_final_decode_seconds_count`,
		`voiced_conversation_mind_first_token_seconds_count`,
		`voiced_conversation_first_audio_seconds_count`,
		`voiced_heard_seconds_total{door="transcribe"}`,
		`voiced_spoken_seconds_total{door="synthesize"}`,
		`voiced_heard_seconds_total{door="conversation"}`,
		`voiced_spoken_seconds_total{door="conversation"}`,
		`voiced_sessions_refused_total{kind="service",reason="auth"}`,
		`voiced_silero_runs_total`,
		`voiced_silero_windows_total`,
	} {
		if got[series] <= 0 {
			t.Errorf("%s = %v, want > 0", series, got[series])
		}
	}
	for _, series := range []string{"voiced_whisper_queue_depth", "voiced_kokoro_permit_waiters",
		"voiced_webrtc_inbound_packets_total", "voiced_webrtc_inbound_packets_lost_total", "voiced_webrtc_inbound_gap_seconds_total"} {
		if _, ok := got[series]; !ok {
			t.Errorf("no %s on /metrics", series)
		}
	}
	if runs, windows := got["voiced_silero_runs_total"], got["voiced_silero_windows_total"]; windows < runs {
		t.Errorf("Silero scored %v windows in %v runs: each run scores one window at least", windows, runs)
	}
	if wait, n := got["voiced_conversation_turn_wait_seconds_sum"], got["voiced_conversation_turn_wait_seconds_count"]; n > 0 && (wait/n < 0.2 || wait/n > 3) {
		t.Errorf("turn wait mean %.3f s: server_vad waits out 500 ms of silence", wait/n)
	}
	for _, h := range []string{"conversation_turn_wait", "conversation_final_decode", "conversation_mind_first_token", "conversation_first_audio", "whisper_decode", "kokoro_pass"} {
		n := got["voiced_"+h+"_seconds_count"]
		t.Logf("%s: n=%v mean %.4f s", h, n, got["voiced_"+h+"_seconds_sum"]/n)
	}
	heard, spoken := s.usageWhen(t, "service", func(h, sp float64) bool { return h > 0 && sp > 0 })
	if heard <= 0 || spoken <= 0 {
		t.Errorf("/v1/usage service: heard %v spoken %v, want both > 0", heard, spoken)
	}
	s.stop()
}
