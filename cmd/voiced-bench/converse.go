package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// converseBench drives realtime conversations (beta dialect, server_vad, input transcription on)
// with real speech, paced in 20 ms appends, silence streamed between turns as a microphone would.
type converseBench struct {
	c         *common
	secret    []byte
	jwt       string
	silenceMs int
	turnType  string // turn_detection.type: "" is server_vad
	eagerness string // semantic_vad's eagerness ("" is the server's default)
	gap       time.Duration
	utts      []utterance
	seq       atomic.Int64
	errors    errCounter
	// What the server told the clients, summed over every conversation (the soak's meter check):
	// reply audio received (24 kHz samples) and response.done's usage, in microseconds.
	receivedSamples atomic.Int64
	reportedHeardUs atomic.Int64
	reportedSpokeUs atomic.Int64
}

// event is one server event as the bench needs it, stamped on arrival.
type event struct {
	typ        string
	at         time.Time
	audioEndMs int64
	text       string // transcript deltas, transcription text
	status     string // response.done
	errMsg     string
}

// turnResult is one answered turn's timing; zero times were not seen.
type turnResult struct {
	utt                                   utterance
	trueEndMs                             int64 // session timeline
	stop, stopped, transcribed, firstText time.Time
	firstAudio, done                      time.Time
	stopAudioEndMs                        int64
	firstSentence                         string
	status                                string
	early                                 bool
}

func runConverse(ctx context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("converse", flag.ContinueOnError)
	c.register(fs)
	secretFile := fs.String("jwt-secret-file", "", "the server's HS256 --jwt-secret-file: the bench mints principal JWTs (sub bench-N) with it")
	jwtFlag := fs.String("jwt", "", "a principal JWT to use instead (else $VOICED_BENCH_JWT); every conversation is then one tenant")
	turns := fs.Int("turns", 12, "answered turns for the latency figures (one conversation)")
	silenceMs := fs.Int("silence-ms", 0, "turn_detection.silence_duration_ms (0: the server's default)")
	gap := fs.Duration("gap", 300*time.Millisecond, "silence streamed after response.done before the next turn")
	rampMax := fs.Int("ramp-max", 4, "conversations per core: raise concurrency 1, 2, 4 … up to this (0: skip)")
	rampTurns := fs.Int("ramp-turns", 3, "turns per conversation at each concurrency level")
	idle := fs.Int("idle", 16, "memory per idle conversation: open this many (0: skip)")
	pid := fs.Int("pid", 0, "read the server's VmRSS from /proc/PID/status (default: /v1/speech/health processResidentBytes)")
	calibrate := fs.Bool("calibrate", true, "time each clip's decode on /v1/transcribe and each first sentence on /v1/synthesize to estimate the server's own overhead")
	mindDelay := fs.Duration("mind-delay", 0, "compare speculation: start a fake OpenAI-compatible mind whose first token comes after this, and two voiced servers (-voiced) that use it, --speculate on and off; speak the same turns to both (semantic_vad) and print each one's answer latency (the other phases are skipped)")
	speculate := fs.String("speculate", "on,off", "with -mind-delay: the sides to run: on,off | on | off")
	voicedBin := fs.String("voiced", os.Getenv("VOICED_BIN"), "with -mind-delay: the voiced binary to start (else $VOICED_BIN)")
	mount := fs.String("speech-assets", os.Getenv("VOICED_SPEECH_ASSETS"), "with -mind-delay: the mount the servers use (default: a fresh fixture mount)")
	rounds := fs.Int("rounds", 4, "with -mind-delay: conversations per side, alternating between the sides (-turns turns each)")
	eagerness := fs.String("eagerness", "", "with -mind-delay: semantic_vad's eagerness (default: the server's, auto)")
	fixtureSpeech := fs.Bool("fixture-speech", false, "with -mind-delay on the fixture mount: lay the fixture codec's tones of a short question (the server's own POST /v1/audio/speech) over each utterance's speech, so Silero hears speech and the fixture Whisper reads a finished question — on the fixture mount real speech alone reads as nonsense, which never reads finished, so nothing is speculated")
	var files stringList
	fs.Var(&files, "audio", "a speech file (.pcm float32 LE 16 kHz, .raw PCM16LE 16 kHz, or .wav); repeatable. Default: $VOICED_SILERO_TESTFILES/*.pcm")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *turns < 1 || *turns > 1000 || *rampMax < 0 || *rampMax > 64 || *rampTurns < 1 || *rampTurns > 100 || *idle < 0 || *idle > 1000 {
		return errors.New("-turns 1..1000, -ramp-max 0..64, -ramp-turns 1..100, -idle 0..1000")
	}
	if *mindDelay > 0 {
		sides := strings.Split(*speculate, ",")
		for _, side := range sides {
			if side != "on" && side != "off" {
				return errors.New("-speculate: on,off | on | off")
			}
		}
		if *voicedBin == "" {
			return errors.New("-mind-delay needs -voiced (or $VOICED_BIN): the bench starts the servers")
		}
		if *rounds < 1 || *rounds > 100 {
			return errors.New("-rounds 1..100")
		}
		recs, err := loadRecordings(files, os.Getenv("VOICED_SILERO_TESTFILES"))
		if err != nil {
			return err
		}
		utts := splitUtterances(recs)
		if len(utts) == 0 {
			return errors.New("no utterance found in the speech files")
		}
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		return speculationCompare{bin: *voicedBin, mount: *mount, delay: *mindDelay, sides: sides, rounds: *rounds,
			turns: *turns, eagerness: *eagerness, fixtureSpeech: *fixtureSpeech}.run(ctx, &c, utts)
	}
	b := &converseBench{c: &c, silenceMs: *silenceMs, gap: *gap}
	switch {
	case *secretFile != "":
		s, err := os.ReadFile(*secretFile)
		if err != nil {
			return fmt.Errorf("-jwt-secret-file: %w", err)
		}
		b.secret = bytes.TrimRight(s, "\r\n")
	case *jwtFlag != "":
		b.jwt = *jwtFlag
	case os.Getenv("VOICED_BENCH_JWT") != "":
		b.jwt = os.Getenv("VOICED_BENCH_JWT")
	default:
		return errors.New("a principal is needed: -jwt-secret-file (the server's HS256 secret) or -jwt")
	}
	recs, err := loadRecordings(files, os.Getenv("VOICED_SILERO_TESTFILES"))
	if err != nil {
		return err
	}
	b.utts = splitUtterances(recs)
	if len(b.utts) == 0 {
		return errors.New("no utterance found in the speech files")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	r := newReport("converse", map[string]any{"turns": *turns, "utterances": len(b.utts), "silence-ms": *silenceMs,
		"gap": gap.String(), "ramp-max": *rampMax, "ramp-turns": *rampTurns, "idle": *idle, "url": c.base.String()})

	// 1. Memory per idle conversation, first, while the server's heap holds nothing of the
	// later phases (Go keeps freed heap mapped: measured after them, new conversations would
	// reuse it and look free).
	if *idle > 0 {
		if err := b.idleMemory(ctx, r, *idle, *pid); err != nil {
			b.errors.add("idle memory", err)
		}
	}

	// 2. Answer latency, one conversation, many turns; the server's own histograms alongside.
	histBefore, histErr := b.histograms(ctx)
	results, err := b.conversation(ctx, *turns)
	if err != nil {
		b.errors.add("latency conversation", err)
	}
	if histErr == nil {
		if after, err := b.histograms(ctx); err == nil {
			histDiff(r, histBefore, after)
		}
	} else {
		r.Notes = append(r.Notes, "GET /metrics: "+histErr.Error())
	}
	if err := b.latency(ctx, r, results, *calibrate); err != nil {
		return err
	}

	// 3. Conversations per core.
	if *rampMax > 0 && ctx.Err() == nil {
		b.ramp(ctx, r, *rampMax, *rampTurns, baseP95(r))
	}
	r.WallS = time.Since(start).Seconds()
	b.errors.into(r)
	return r.write(&c)
}

// latency summarises one conversation's turns into r.
func (b *converseBench) latency(ctx context.Context, r *Report, results []turnResult, calibrate bool) error {
	total := &Series{Name: "answer: speaker stops → first audio delta", Unit: "ms",
		Note: "from when the append holding the last speech sample was sent (true end found by frame energy, 20 ms bound)"}
	turnWait := &Series{Name: "  turn wait (speech_stopped arrives)", Unit: "ms", Note: "true end of speech → speech_stopped received (silence_duration_ms is most of it)"}
	turnAudio := &Series{Name: "  speech_stopped audio_end_ms − true end", Unit: "ms", Note: "where the server put the end, on the audio clock; OpenAI's audio_end_ms includes silence_duration_ms"}
	decode := &Series{Name: "  final decode (→ transcription.completed)", Unit: "ms", Note: "speech_stopped → input transcription completed: commit, resample, Whisper"}
	mindFirst := &Series{Name: "  mind first sentence (→ transcript delta)", Unit: "ms",
		Note: "transcription.completed → first response.audio_transcript.delta: the mind's tokens up to the first sentence end (echo mind: no model), the chunker"}
	synth := &Series{Name: "  first audio frame (→ audio delta)", Unit: "ms", Note: "first transcript delta → first audio delta: Kokoro on the first sentence, encode, send"}
	overhead := &Series{Name: "  own overhead (estimate)", Unit: "ms",
		Note: "answer − turn wait − the clip's Whisper decodeMs (/v1/transcribe final) − the first sentence's firstFrameMs (/v1/synthesize), both timed alone on the same server"}
	doneS := &Series{Name: "speaker stops → response.done", Unit: "ms"}
	var whisperMs map[string]float64
	var kokoroMs map[string]float64
	if calibrate && len(results) > 0 {
		whisperMs, kokoroMs = b.calibrate(ctx, results)
	}
	early := 0
	for _, t := range results {
		if t.firstAudio.IsZero() || t.stopped.IsZero() {
			continue
		}
		if t.early {
			early++ // the server ended the turn inside the utterance: the split is not this turn's
			continue
		}
		ans := t.firstAudio.Sub(t.stop)
		total.AddDuration(ans)
		turnWait.AddDuration(t.stopped.Sub(t.stop))
		turnAudio.Add(float64(t.stopAudioEndMs - t.trueEndMs))
		if !t.transcribed.IsZero() {
			decode.AddDuration(t.transcribed.Sub(t.stopped))
			if !t.firstText.IsZero() {
				mindFirst.AddDuration(t.firstText.Sub(t.transcribed))
			}
		}
		if !t.firstText.IsZero() {
			synth.AddDuration(t.firstAudio.Sub(t.firstText))
		}
		if !t.done.IsZero() {
			doneS.AddDuration(t.done.Sub(t.stop))
		}
		w, okW := whisperMs[t.utt.name]
		k, okK := kokoroMs[t.firstSentence]
		if okW && okK {
			overhead.Add(ms(ans) - ms(t.stopped.Sub(t.stop)) - w - k)
		}
	}
	if early > 0 {
		r.Values["turns ended early by the server (excluded)"] = float64(early)
	}
	r.Values["turns answered"] = float64(total.N())
	r.Values["turns tried"] = float64(len(results))
	return r.add(total, turnWait, turnAudio, decode, mindFirst, synth, overhead, doneS)
}

// baseP95 is the latency phase's answer p95 (its many turns make a steadier baseline than the
// ramp's first level); -1 when it has none.
func baseP95(r *Report) float64 {
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Name, "answer:") && m.N > 0 {
			return m.P95
		}
	}
	return -1
}

// ramp raises the number of concurrent conversations until the answer latency p95 doubles
// against base (the single-conversation p95; the first level's when base < 0).
func (b *converseBench) ramp(ctx context.Context, r *Report, maxConc, turns int, base float64) {
	best := 0
	for conc := 1; conc <= maxConc && ctx.Err() == nil; conc *= 2 {
		s := &Series{Name: fmt.Sprintf("answer latency, %d concurrent", conc), Unit: "ms"}
		after := &Series{Name: fmt.Sprintf("  after speech_stopped, %d concurrent", conc), Unit: "ms"}
		var wg sync.WaitGroup
		var refused atomic.Int64
		for range conc {
			wg.Go(func() {
				res, err := b.conversation(ctx, turns)
				if err != nil {
					if strings.Contains(err.Error(), "429") {
						refused.Add(1)
					} else {
						b.errors.add(fmt.Sprintf("ramp %d", conc), err)
					}
				}
				for _, t := range res {
					if !t.firstAudio.IsZero() && !t.stopped.IsZero() && !t.early {
						s.AddDuration(t.firstAudio.Sub(t.stop))
						after.AddDuration(t.firstAudio.Sub(t.stopped))
					}
				}
			})
		}
		wg.Wait()
		r.add(s, after)
		if n := refused.Load(); n > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("at %d concurrent the server refused %d conversations (429: --max-conversations / --max-per-tenant): the ramp stops there", conc, n))
			break
		}
		sum, _ := Summarize(s.Samples())
		if sum.N == 0 {
			break
		}
		if base < 0 {
			base = sum.P95
		}
		if sum.P95 >= 2*base {
			r.Notes = append(r.Notes, fmt.Sprintf("answer p95 doubled at %d concurrent (%.0f ms vs %.0f ms alone, the latency phase's p95)", conc, sum.P95, base))
			break
		}
		best = conc
		if conc*2 > maxConc {
			r.Notes = append(r.Notes, fmt.Sprintf("answer p95 had not doubled at %d concurrent, the most tried: the capacity is at least that", conc))
		}
	}
	r.Values["conversations before answer p95 doubles (max tried that held)"] = float64(best)
	r.Values["  per core of this machine (bench client on the same cores)"] = float64(best) / float64(runtime.NumCPU())
}

// conversation opens one conversation and speaks turns utterances into it, one after another.
func (b *converseBench) conversation(ctx context.Context, turns int) ([]turnResult, error) {
	conn, err := b.open(ctx)
	if err != nil {
		return nil, err
	}
	events := make(chan event, 1024)
	var reader sync.WaitGroup
	defer func() { conn.CloseNow(); reader.Wait() }()
	if err := b.configure(ctx, conn); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	reader.Go(func() {
		defer close(events)
		for {
			_, data, err := conn.Read(rctx)
			if err != nil {
				return
			}
			at := time.Now()
			var ev struct {
				Type       string `json:"type"`
				AudioEndMs int64  `json:"audio_end_ms"`
				Delta      string `json:"delta"`
				Transcript string `json:"transcript"`
				Response   struct {
					Status string `json:"status"`
					Usage  struct {
						Heard  float64 `json:"heard_seconds"`
						Spoken float64 `json:"spoken_seconds"`
					} `json:"usage"`
				} `json:"response"`
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(data, &ev) != nil {
				continue
			}
			e := event{typ: ev.Type, at: at, audioEndMs: ev.AudioEndMs, status: ev.Response.Status, errMsg: ev.Error.Message}
			switch ev.Type {
			case "response.audio_transcript.delta", "response.output_audio_transcript.delta":
				e.text = ev.Delta
			case "conversation.item.input_audio_transcription.completed":
				e.text = ev.Transcript
			case "response.audio.delta", "response.output_audio.delta":
				e.typ = "audio.delta"
				if raw, err := base64.StdEncoding.DecodeString(ev.Delta); err == nil {
					b.receivedSamples.Add(int64(len(raw) / 2))
				}
			case "response.done":
				b.reportedHeardUs.Add(int64(ev.Response.Usage.Heard * 1e6))
				b.reportedSpokeUs.Add(int64(ev.Response.Usage.Spoken * 1e6))
			}
			select {
			case events <- e:
			case <-rctx.Done():
				return
			}
		}
	})

	silence := appendFrame(make([]float32, rate24k*frameMs/1000))
	clock := time.Now()
	var sent int64 // frames sent: the session's audio clock is sent × 20 ms
	next := func() error {
		if wait := time.Until(clock.Add(time.Duration(sent*frameMs) * time.Millisecond)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	var results []turnResult
	for i := range turns {
		u := b.utts[i%len(b.utts)]
		pcm := to24k(u.pcm)
		const fl = rate24k * frameMs / 1000
		var frames [][]byte
		for at := 0; at < len(pcm); at += fl {
			chunk := pcm[at:min(at+fl, len(pcm))]
			if len(chunk) < fl {
				chunk = append(chunk, make([]float32, fl-len(chunk))...)
			}
			frames = append(frames, appendFrame(chunk))
		}
		endFrame := (u.end*rate24k/rate16k + fl - 1) / fl // frames up to and holding the last speech sample
		t := turnResult{utt: u, trueEndMs: sent*frameMs + int64(u.end)*1000/rate16k}
		var doneAt time.Time
		deadline := time.Time{}
		for k := 0; ; k++ {
			if err := next(); err != nil {
				return results, err
			}
			frame := silence
			if k < len(frames) {
				frame = frames[k]
			}
			if err := conn.Write(ctx, websocket.MessageText, frame); err != nil {
				return results, fmt.Errorf("append: %w", err)
			}
			sent++
			if k == endFrame-1 {
				t.stop = time.Now()
				deadline = t.stop.Add(20 * time.Second)
			}
		drain:
			for {
				select {
				case e, ok := <-events:
					if !ok {
						return results, errors.New("the server closed the conversation")
					}
					b.note(&t, e)
					if e.typ == "response.done" && !t.stop.IsZero() && doneAt.IsZero() {
						doneAt = e.at
					}
				default:
					break drain
				}
			}
			if !doneAt.IsZero() && time.Since(doneAt) >= b.gap && k >= len(frames) {
				break
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				b.errors.add("no answer within 20 s of the end of speech", nil)
				break
			}
		}
		results = append(results, t)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	return results, nil
}

// note records the first of each event of the turn; before the end of speech only
// speech_stopped matters (an early end is reported as such).
func (b *converseBench) note(t *turnResult, e event) {
	switch e.typ {
	case "input_audio_buffer.speech_stopped":
		if t.stop.IsZero() {
			t.early = true // the server ended the turn inside the utterance
		}
		if t.stopped.IsZero() {
			t.stopped, t.stopAudioEndMs = e.at, e.audioEndMs
		}
	case "conversation.item.input_audio_transcription.completed":
		if t.transcribed.IsZero() && !t.stopped.IsZero() {
			t.transcribed = e.at
		}
	case "response.audio_transcript.delta", "response.output_audio_transcript.delta":
		if t.firstText.IsZero() && !t.stopped.IsZero() {
			t.firstText, t.firstSentence = e.at, strings.TrimSpace(e.text)
		}
	case "audio.delta":
		if t.firstAudio.IsZero() && !t.stopped.IsZero() {
			t.firstAudio = e.at
		}
	case "response.done":
		if t.done.IsZero() && !t.stopped.IsZero() {
			t.done, t.status = e.at, e.status
		}
	case "error":
		b.errors.add("server error event", errors.New(e.errMsg))
	}
}
