package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"
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
	// debugURL is the server's profiling listener (-debug-url): the ramp's busiest level is
	// profiled there and split by stage. Nil: no profile.
	debugURL *url.URL
	// rampThrough keeps the ramp raising concurrency to its maximum after the p95 doubled (every
	// level measured, the busiest profiled).
	rampThrough bool
	profileOut  string // where that profile is kept ("": not kept)
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
	rampMax := fs.Int("ramp-max", 4, "the most concurrent conversations: raise concurrency 1, 2, 4 … up to this (0: skip)")
	rampList := fs.String("ramp-levels", "", "the ramp's concurrency levels instead of doubling, ascending (64,80,96,112,128: where between two doublings the answer p95 doubles); the last is profiled")
	rampTurns := fs.Int("ramp-turns", 3, "turns per conversation at each concurrency level")
	rampThrough := fs.Bool("ramp-through", false, "keep raising concurrency to -ramp-max after the answer p95 doubled (every level measured; the busiest profiled)")
	idle := fs.Int("idle", 16, "memory per idle conversation: open this many (0: skip)")
	pid := fs.Int("pid", 0, "read the server's VmRSS from /proc/PID/status (default: /v1/speech/health processResidentBytes)")
	debugURL := fs.String("debug-url", "", "the server's --debug-addr listener (http://127.0.0.1:6060, loopback only): profile the ramp's busiest level and report the server's CPU by stage")
	profileOut := fs.String("profile-out", "", "with -debug-url: keep the CPU profile in this file (go tool pprof -top FILE)")
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
	if *turns < 1 || *turns > 1000 || *rampMax < 0 || *rampMax > 256 || *rampTurns < 1 || *rampTurns > 100 || *idle < 0 || *idle > 1000 {
		return errors.New("-turns 1..1000, -ramp-max 0..256, -ramp-turns 1..100, -idle 0..1000")
	}
	levels, err := rampLevels(*rampList, *rampMax)
	if err != nil {
		return err
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
	if *debugURL != "" {
		u, err := loopbackURL(*debugURL)
		if err != nil {
			return fmt.Errorf("-debug-url: %w", err)
		}
		b.debugURL, b.profileOut = u, *profileOut
	}
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
	b.rampThrough = *rampThrough
	if len(levels) > 0 && ctx.Err() == nil {
		b.ramp(ctx, r, levels, *rampTurns, baseP95(r))
	}
	r.WallS = time.Since(start).Seconds()
	b.errors.into(r)
	return r.write(&c)
}
