package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/voiced/voiced/audio"
)

// soak: N conversations (real speech, paced; each speaks a few turns, hangs up and reconnects)
// plus a raw-door loop (speech synthesized, then transcribed) for a fixed length, while the
// server's resident memory, Go heap, goroutines, open files, Whisper queue and the answer latency
// are sampled. The verdict: each series flat after warm-up (its fitted slope over the measured
// span within a bound), goroutines and open files back to where they started once the clients are
// gone, no unprovoked error, and the meter's totals equal to what the server told the clients.
type soakSample struct {
	T          float64  `json:"t"` // seconds since the start
	RSS        float64  `json:"rssBytes"`
	Heap       float64  `json:"heapBytes"`
	Goroutines float64  `json:"goroutines"`
	FDs        float64  `json:"openFds"`
	Queue      float64  `json:"whisperQueue"`
	AnswerMs   float64  `json:"-"`                     // speech end → first reply audio, turns answered in this window (NaN: none)
	Answer     *float64 `json:"answerP50Ms,omitempty"` // AnswerMs in the JSON (absent: none)
}

// soakSeries are the sampled series the verdict judges, with how much each may drift over the
// measured span: a fraction of its mean, or an absolute floor (whichever is larger).
var soakSeries = []struct {
	name     string
	get      func(soakSample) float64
	frac     float64
	absolute float64
}{
	{"rssBytes", func(s soakSample) float64 { return s.RSS }, 0.10, 16 << 20},
	{"heapBytes", func(s soakSample) float64 { return s.Heap }, 0.25, 16 << 20},
	{"goroutines", func(s soakSample) float64 { return s.Goroutines }, 0.10, 10},
	{"openFds", func(s soakSample) float64 { return s.FDs }, 0.10, 8},
	{"whisperQueue", func(s soakSample) float64 { return s.Queue }, 0, 2},
}

type soakReport struct {
	Params  map[string]any     `json:"params"`
	Samples []soakSample       `json:"samples"`
	Drift   map[string]float64 `json:"drift"` // fitted slope × measured span, per series
	Bound   map[string]float64 `json:"bound"`
	Meter   map[string]float64 `json:"meter"`
	Turns   int                `json:"turns"`
	Errors  map[string]int     `json:"errors,omitempty"`
	Failed  []string           `json:"failed,omitempty"`
	Verdict string             `json:"verdict"`
}

func runSoak(ctx context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	c.register(fs)
	secretFile := fs.String("jwt-secret-file", "", "the server's HS256 --jwt-secret-file (the soak mints one principal per conversation)")
	conversations := fs.Int("conversations", 4, "concurrent conversations")
	length := fs.Duration("duration", 10*time.Minute, "how long the load runs")
	every := fs.Duration("sample", 5*time.Second, "sampling period")
	warmup := fs.Duration("warmup", 0, "samples before this are not judged (default: a fifth of -duration)")
	turns := fs.Int("turns", 3, "turns per conversation before it hangs up and reconnects")
	rawDoors := fs.Bool("raw-doors", true, "also run a loop on POST /v1/audio/speech and /v1/audio/transcriptions")
	pid := fs.Int("pid", 0, "the server's pid: open files are read from /proc/PID/fd (else process_open_fds)")
	png := fs.String("png", "", "write the series as a PNG plot here")
	var files stringList
	fs.Var(&files, "audio", "a speech file (.pcm float32 LE 16 kHz, or .wav); repeatable. Default: $VOICED_SILERO_TESTFILES/*.pcm")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *conversations < 1 || *conversations > 256 || *length <= 0 || *length > 24*time.Hour || *every < 100*time.Millisecond || *turns < 1 {
		return errors.New("-conversations 1..256, -duration up to 24h, -sample ≥ 100ms, -turns ≥ 1")
	}
	if *warmup == 0 {
		*warmup = *length / 5
	}
	if *secretFile == "" {
		return errors.New("-jwt-secret-file is needed (the server's HS256 secret)")
	}
	secret, err := os.ReadFile(*secretFile)
	if err != nil {
		return fmt.Errorf("-jwt-secret-file: %w", err)
	}
	b := &converseBench{c: &c, secret: bytes.TrimRight(secret, "\r\n"), gap: 300 * time.Millisecond}
	recs, err := loadRecordings(files, os.Getenv("VOICED_SILERO_TESTFILES"))
	if err != nil {
		return err
	}
	if b.utts = splitUtterances(recs); len(b.utts) == 0 {
		return errors.New("no utterance found in the speech files")
	}
	rep := &soakReport{Params: map[string]any{"conversations": *conversations, "duration": length.String(), "sample": every.String(),
		"warmup": warmup.String(), "turns": *turns, "rawDoors": *rawDoors, "url": c.base.String()},
		Drift: map[string]float64{}, Bound: map[string]float64{}, Meter: map[string]float64{}}

	before, err := b.soakSample(ctx, *pid)
	if err != nil {
		return fmt.Errorf("first sample: %w", err)
	}
	start := time.Now()
	load, stopLoad := context.WithTimeout(ctx, *length)
	defer stopLoad()

	var mu sync.Mutex
	var window []float64 // answer latencies (ms) since the last sample
	var wg sync.WaitGroup
	for range *conversations {
		wg.Go(func() {
			for load.Err() == nil {
				results, err := b.conversation(load, *turns)
				if err != nil && load.Err() == nil {
					b.errors.add("conversation", err)
					time.Sleep(time.Second) // a refused or failed conversation: do not spin
				}
				mu.Lock()
				for _, t := range results {
					if !t.firstAudio.IsZero() && !t.stop.IsZero() {
						window = append(window, float64(t.firstAudio.Sub(t.stop).Microseconds())/1000)
						rep.Turns++
					}
				}
				mu.Unlock()
			}
		})
	}
	if *rawDoors {
		wg.Go(func() { b.rawDoorLoop(load) })
	}
	tick := time.NewTicker(*every)
	defer tick.Stop()
sampling:
	for {
		select {
		case <-load.Done():
			break sampling
		case <-tick.C:
		}
		s, err := b.soakSample(ctx, *pid)
		if err != nil {
			b.errors.add("sample", err)
			continue
		}
		s.T = time.Since(start).Seconds()
		mu.Lock()
		s.AnswerMs = math.NaN()
		if len(window) > 0 {
			s.AnswerMs = median(window)
			s.Answer = &s.AnswerMs
			window = window[:0]
		}
		mu.Unlock()
		rep.Samples = append(rep.Samples, s)
		fmt.Fprintf(os.Stderr, "soak %5.0fs  rss %6.1f MiB  heap %6.1f MiB  goroutines %4.0f  fds %3.0f  queue %2.0f  answer p50 %6.0f ms\n",
			s.T, s.RSS/(1<<20), s.Heap/(1<<20), s.Goroutines, s.FDs, s.Queue, s.AnswerMs)
	}
	wg.Wait()

	// Flat after warm-up.
	var xs []float64
	for _, s := range rep.Samples {
		if s.T >= warmup.Seconds() {
			xs = append(xs, s.T)
		}
	}
	if len(xs) < 3 {
		rep.Failed = append(rep.Failed, fmt.Sprintf("only %d samples after warm-up: run longer or sample more often", len(xs)))
	}
	for _, ser := range soakSeries {
		var ys []float64
		for _, s := range rep.Samples {
			if s.T >= warmup.Seconds() {
				ys = append(ys, ser.get(s))
			}
		}
		if len(ys) < 3 {
			continue
		}
		_, slope := stat.LinearRegression(xs, ys, nil, false)
		drift := slope * (xs[len(xs)-1] - xs[0])
		bound := math.Max(ser.frac*stat.Mean(ys, nil), ser.absolute)
		rep.Drift[ser.name], rep.Bound[ser.name] = drift, bound
		if drift > bound {
			rep.Failed = append(rep.Failed, fmt.Sprintf("%s grew %.0f over the measured span (bound %.0f)", ser.name, drift, bound))
		}
	}

	// Everything the clients held is released once they are gone.
	after, settled := b.settle(ctx, *pid, before)
	rep.Meter["goroutinesBefore"], rep.Meter["goroutinesAfter"] = before.Goroutines, after.Goroutines
	rep.Meter["fdsBefore"], rep.Meter["fdsAfter"] = before.FDs, after.FDs
	if !settled {
		rep.Failed = append(rep.Failed, fmt.Sprintf("after the load: %.0f goroutines and %.0f open files, %.0f and %.0f before it",
			after.Goroutines, after.FDs, before.Goroutines, before.FDs))
	}

	// The meter holds what the server told the clients (within one flush per conversation).
	if err := b.meterCheck(ctx, rep, *conversations); err != nil {
		rep.Failed = append(rep.Failed, err.Error())
	}
	b.errors.mu.Lock()
	rep.Errors = map[string]int{}
	for k, v := range b.errors.m {
		rep.Errors[k] = v
	}
	b.errors.mu.Unlock()
	for k, v := range rep.Errors {
		rep.Failed = append(rep.Failed, fmt.Sprintf("%d × %s", v, k))
	}
	if rep.Turns == 0 {
		rep.Failed = append(rep.Failed, "no turn was answered")
	}
	rep.Verdict = "PASS"
	if len(rep.Failed) > 0 {
		rep.Verdict = "FAIL"
	}
	if *png != "" {
		if err := plotSoak(rep, *png); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	out, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if c.jsonOut != "" {
		if err := os.WriteFile(c.jsonOut, append(out, '\n'), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("soak: %s — %d turns answered over %s by %d conversations; drift %v (bounds %v); meter %v\n",
		rep.Verdict, rep.Turns, length, *conversations, rounded(rep.Drift), rounded(rep.Bound), rounded(rep.Meter))
	for _, f := range rep.Failed {
		fmt.Println("  failed:", f)
	}
	if rep.Verdict != "PASS" {
		return errors.New("soak failed")
	}
	return nil
}

func rounded(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = math.Round(v*1000) / 1000
	}
	return out
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return Percentile(s, 50)
}

// soakSample reads the server's own series on GET /metrics.
func (b *converseBench) soakSample(ctx context.Context, pid int) (soakSample, error) {
	g, err := b.gauges(ctx, "process_resident_memory_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines",
		"process_open_fds", "voiced_whisper_queue_depth")
	if err != nil {
		return soakSample{}, err
	}
	s := soakSample{RSS: g["process_resident_memory_bytes"], Heap: g["go_memstats_heap_inuse_bytes"],
		Goroutines: g["go_goroutines"], FDs: g["process_open_fds"], Queue: g["voiced_whisper_queue_depth"]}
	if pid > 0 {
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			s.FDs = float64(len(ents))
		}
	}
	return s, nil
}

// settle waits (up to 15 s) for goroutines and open files to come back to where they were before
// the load, with a little slack for the scrape's own connection and idle pools.
func (b *converseBench) settle(ctx context.Context, pid int, before soakSample) (soakSample, bool) {
	var last soakSample
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := b.soakSample(ctx, pid)
		if err == nil {
			last = s
			if s.Goroutines <= before.Goroutines+4 && s.FDs <= before.FDs+4 {
				return s, true
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return last, false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// meterCheck compares GET /v1/usage (waiting up to 5 s for the last flushes) with what the server
// told the clients: spoken seconds against the reply audio received, heard seconds against the
// sum of response.done's usage.
func (b *converseBench) meterCheck(ctx context.Context, rep *soakReport, conversations int) error {
	received := float64(b.receivedSamples.Load()) / 24000
	reportedHeard := float64(b.reportedHeardUs.Load()) / 1e6
	tolerance := 0.05*float64(conversations) + 0.5
	var heard, spoken float64
	deadline := time.Now().Add(5 * time.Second)
	for {
		var u struct {
			Principals []struct {
				Principal string `json:"principal"`
				Days      []struct {
					Doors map[string]struct {
						Heard  float64 `json:"heardSeconds"`
						Spoken float64 `json:"spokenSeconds"`
					} `json:"doors"`
				} `json:"days"`
			} `json:"principals"`
		}
		if err := b.c.getJSON(ctx, "/v1/usage", &u); err != nil {
			return fmt.Errorf("GET /v1/usage: %w", err)
		}
		heard, spoken = 0, 0
		for _, p := range u.Principals {
			if !strings.HasPrefix(p.Principal, "bench-") {
				continue
			}
			for _, d := range p.Days {
				heard += d.Doors["conversation"].Heard
				spoken += d.Doors["conversation"].Spoken
			}
		}
		if math.Abs(spoken-received) <= tolerance || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	rep.Meter["spokenMetered"], rep.Meter["spokenReceived"] = spoken, received
	rep.Meter["heardMetered"], rep.Meter["heardReported"] = heard, reportedHeard
	if math.Abs(spoken-received) > tolerance {
		return fmt.Errorf("the meter holds %.3f s spoken, the clients received %.3f s (tolerance %.2f s)", spoken, received, tolerance)
	}
	// Heard audio after a conversation's last response.done is metered but never reported to it.
	if heard+tolerance < reportedHeard {
		return fmt.Errorf("the meter holds %.3f s heard, the responses reported %.3f s", heard, reportedHeard)
	}
	return nil
}

// rawDoorLoop speaks a sentence on POST /v1/audio/speech (pcm) and transcribes it on POST
// /v1/audio/transcriptions, over and over, until ctx ends.
func (b *converseBench) rawDoorLoop(ctx context.Context) {
	for ctx.Err() == nil {
		body := strings.NewReader(`{"model":"kokoro","input":"The soak keeps talking. It checks that nothing grows.","voice":"af_heart","response_format":"pcm"}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.c.http("/v1/audio/speech"), body)
		req.Header = b.c.authHeader()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				b.errors.add("raw door speech", err)
			}
			return
		}
		pcm24, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.errors.add("raw door speech", errors.New(resp.Status))
			time.Sleep(time.Second)
			continue
		}
		f, err := audio.PCM16ToFloat32(pcm24)
		if err != nil {
			b.errors.add("raw door speech body", err)
			continue
		}
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		// Raw PCM16LE mono 16 kHz has no bytes of its own to be recognised by: declared audio/pcm.
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", `form-data; name="file"; filename="speech.pcm"`)
		hdr.Set("Content-Type", "audio/pcm")
		part, _ := mw.CreatePart(hdr)
		part.Write(audio.Float32ToPCM16(audio.Resample(f, rate24k, rate16k)))
		mw.WriteField("model", "whisper-1")
		mw.Close()
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, b.c.http("/v1/audio/transcriptions"), &form)
		req.Header = b.c.authHeader()
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				b.errors.add("raw door transcription", err)
			}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.errors.add("raw door transcription", errors.New(resp.Status))
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}
