package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/audio"
)

// The speculation comparison (converse -mind-delay): the same audio spoken to two voiced servers
// that differ only in --speculate, both answering through one fake OpenAI-compatible mind whose
// first token comes after -mind-delay. The bench starts the mind and both servers itself (they
// must know the mind's URL at start), alternates conversations between them so that load on a
// shared machine falls on both alike, and prints the answer latency of each side by side.

// fakeMind is an OpenAI-compatible POST /v1/chat/completions (stream: true) that waits delay,
// then answers "You asked: <the last user message>" in a few chunks.
type fakeMind struct {
	delay time.Duration
	calls atomic.Int64
}

func (f *fakeMind) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	f.calls.Add(1)
	var body struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last := ""
	for _, m := range body.Messages {
		if m.Role == "user" && m.Content != nil {
			last = *m.Content
		}
	}
	select {
	case <-time.After(f.delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, piece := range []string{"You asked: ", strings.TrimSpace(last), " Anything else?"} {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// spawned is one voiced server started by the bench.
type spawned struct {
	name string
	cmd  *exec.Cmd
	url  *url.URL
	done chan struct{}
}

var listenAddr = regexp.MustCompile(`addr=([0-9.]+:[0-9]+)`)

// spawnVoiced starts bin serve on a free loopback port with args and waits for its address.
func spawnVoiced(ctx context.Context, name, bin string, args []string) (*spawned, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--bind", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &spawned{name: name, cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if traceEvents {
				fmt.Fprintf(os.Stderr, "trace %s: %s\n", name, sc.Text())
			}
			if m := listenAddr.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		cmd.Wait()
	}()
	select {
	case addr := <-found:
		s.url = &url.URL{Scheme: "http", Host: addr}
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before listening", name)
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s did not report its address within 60 s", name)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

func (s *spawned) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

type speculationCompare struct {
	bin, mount string
	delay      time.Duration
	sides      []string // "on", "off"
	rounds     int      // conversations per side
	turns      int      // turns per conversation
	eagerness  string
	// fixtureSpeech: utterances carry the fixture codec's tones of a question (fixtureQuestions).
	fixtureSpeech bool
}

// run starts the mind and the servers, alternates conversations and reports.
func (sc speculationCompare) run(ctx context.Context, c *common, utts []utterance) error {
	tmp, err := os.MkdirTemp("", "voiced-bench-speculate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	secret, token := make([]byte, 48), make([]byte, 24)
	rand.Read(secret)
	rand.Read(token)
	secretFile, tokenFile := filepath.Join(tmp, "jwt.secret"), filepath.Join(tmp, "token")
	secretText := base64.RawURLEncoding.EncodeToString(secret)
	if err := os.WriteFile(secretFile, []byte(secretText), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(tokenFile, []byte(base64.RawURLEncoding.EncodeToString(token)), 0o600); err != nil {
		return err
	}
	mount := sc.mount
	if mount == "" {
		mount = filepath.Join(tmp, "mount")
		if out, err := exec.CommandContext(ctx, sc.bin, "assets", "fixture", mount).CombinedOutput(); err != nil {
			return fmt.Errorf("assets fixture: %w: %s", err, out)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fm := &fakeMind{delay: sc.delay}
	hs := &http.Server{Handler: fm}
	go hs.Serve(ln)
	defer hs.Close()
	mindURL := "http://" + ln.Addr().String() + "/v1"

	benches := map[string]*converseBench{}
	var servers []*spawned
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, side := range sc.sides {
		args := []string{"--token-file", tokenFile, "--jwt-secret-file", secretFile, "--data-dir", filepath.Join(tmp, "data-"+side),
			"--speech-assets", mount, "--mind-url", mindURL, "--mind-model", "fake", "--speculate=" + map[string]string{"on": "true", "off": "false"}[side],
			"--max-conversations", "8", "--max-per-tenant", "8"}
		s, err := spawnVoiced(ctx, "voiced speculate="+side, sc.bin, args)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		if err := waitWarm(ctx, s.url, base64.RawURLEncoding.EncodeToString(token)); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		sideCommon := *c
		sideCommon.base = s.url
		sideCommon.token = base64.RawURLEncoding.EncodeToString(token)
		if sc.fixtureSpeech && len(benches) == 0 {
			if utts, err = withFixtureQuestions(ctx, &sideCommon, utts); err != nil {
				return fmt.Errorf("-fixture-speech: %w", err)
			}
		}
		benches[side] = &converseBench{c: &sideCommon, secret: []byte(secretText), gap: 300 * time.Millisecond,
			utts: utts, turnType: "semantic_vad", eagerness: sc.eagerness}
	}

	start := time.Now()
	r := newReport("converse (speculation)", map[string]any{"mind-delay": sc.delay.String(), "speculate": strings.Join(sc.sides, ","),
		"rounds": sc.rounds, "turns": sc.turns, "turn_detection": "semantic_vad", "eagerness": sc.eagerness, "utterances": len(utts),
		"fixture-speech": sc.fixtureSpeech})
	answers := map[string]*Series{}
	for _, side := range sc.sides {
		answers[side] = &Series{Name: "answer, speculate " + side + ": speaker stops → first audio delta", Unit: "ms",
			Note: "same audio, same mind (first token after " + sc.delay.String() + "), conversations alternating between the servers"}
	}
	early := map[string]int{}
	for round := range sc.rounds {
		for i := range sc.sides {
			// Alternate which side goes first, so neither always follows the other.
			side := sc.sides[(i+round)%len(sc.sides)]
			b := benches[side]
			results, err := b.conversation(ctx, sc.turns)
			if err != nil {
				b.errors.add("conversation speculate="+side, err)
			}
			for _, t := range results {
				switch {
				case t.early:
					early[side]++
				case !t.firstAudio.IsZero() && !t.stop.IsZero():
					answers[side].AddDuration(t.firstAudio.Sub(t.stop))
				}
			}
		}
	}
	for _, side := range sc.sides {
		if err := r.add(answers[side]); err != nil {
			return err
		}
		b := benches[side]
		if counts, err := b.counters(ctx, "voiced_conversation_speculative_mind_calls_total"); err == nil {
			for _, outcome := range []string{"started", "used", "discarded"} {
				r.Values["speculate "+side+": speculative mind calls "+outcome] = counts[`outcome="`+outcome+`"`]
			}
		}
		r.Values["speculate "+side+": turns ended inside the utterance (excluded)"] = float64(early[side])
		b.errors.into(r)
	}
	// With one side only (-speculate on, or off) there is nothing to compare.
	if answers["on"] != nil && answers["off"] != nil {
		if on, off := answers["on"].Samples(), answers["off"].Samples(); len(on) > 0 && len(off) > 0 {
			son, _ := Summarize(on)
			soff, _ := Summarize(off)
			r.Values["answer p50 ratio on/off"] = son.P50 / soff.P50
			r.Values["answer p95 ratio on/off"] = son.P95 / soff.P95
		}
	}
	r.Values["mind calls (both servers)"] = float64(fm.calls.Load())
	r.WallS = time.Since(start).Seconds()
	return r.write(c)
}

// waitWarm polls /health until the speech models are loaded.
func waitWarm(ctx context.Context, u *url.URL, token string) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/v1/voice/health", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.New("not warm within 90 s")
}

// counters reads a counter's series from /metrics by their label set.
func (b *converseBench) counters(ctx context.Context, name string) (map[string]float64, error) {
	text, err := b.metricsText(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := strings.TrimPrefix(line, name)
		labels, value, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(value, &v); err == nil {
			out[strings.Trim(labels, "{}")] = v
		}
	}
	return out, nil
}

// fixtureQuestions are spoken as the fixture codec's tones over the recorded speech (-fixture-speech).
var fixtureQuestions = []string{"What time is it?", "Where is the station?", "Is it raining today?", "Can you help me?"}

// withFixtureQuestions lays a fixture question's tones (24 kHz PCM from the server's POST
// /v1/audio/speech, at 16 kHz) over each utterance's speech, from where the speech starts, and
// cuts the speech where the tones end; utterances whose speech is shorter than the tones are left
// out. Levels as tried by hand: speech to a 0.3 peak, the tones at 0.3 of theirs — Silero then
// hears speech throughout and the fixture Whisper reads the question ("wOʌtbtˈIm ɪz ɪt?": the
// speech costs it a phoneme or two, the question mark stays).
func withFixtureQuestions(ctx context.Context, c *common, utts []utterance) ([]utterance, error) {
	var tones [][]float32
	for _, q := range fixtureQuestions {
		body, _ := json.Marshal(map[string]any{"input": q, "response_format": "pcm"})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.http("/v1/audio/speech"), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header = c.authHeader()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		pcm, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("POST /v1/audio/speech: %d %v: %.200s", resp.StatusCode, err, pcm)
		}
		f, err := audio.PCM16ToFloat32(pcm)
		if err != nil {
			return nil, err
		}
		tones = append(tones, audio.Resample(f, rate24k, rate16k))
	}
	out := layTones(utts, tones, fixtureQuestions)
	if len(out) == 0 {
		return nil, errors.New("no utterance is as long as a question's tones")
	}
	return out, nil
}

// layTones is withFixtureQuestions' mixing: utterance i gets tones[i % len(tones)] from its speech's
// start, the speech normalised to a 0.3 peak, the tones at 0.3, cut where the tones end.
func layTones(utts []utterance, tones [][]float32, names []string) []utterance {
	var out []utterance
	for i, u := range utts {
		q := tones[i%len(tones)]
		if u.end-u.start < len(q) {
			continue
		}
		peak := 0.0
		for _, v := range u.pcm[u.start:u.end] {
			peak = max(peak, math.Abs(float64(v)))
		}
		if peak == 0 {
			continue
		}
		gain := float32(0.3 / peak)
		pcm := make([]float32, u.start+len(q))
		for k := range u.start {
			pcm[k] = u.pcm[k] * gain
		}
		for k, t := range q {
			pcm[u.start+k] = u.pcm[u.start+k]*gain + 0.3*t
		}
		out = append(out, utterance{name: u.name + "+" + names[i%len(tones)], pcm: pcm, start: u.start, end: len(pcm)})
	}
	return out
}
