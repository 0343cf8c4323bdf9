package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/realtimeclient"
)

// The converse bench's phases after the latency conversation's own: memory per idle
// conversation, the latency summary, the concurrency ramp.

// idleMemory opens k conversations that say nothing and reads the server's resident bytes
// (and, from /metrics, its goroutines and Go heap in use) before and after.
func (b *converseBench) idleMemory(ctx context.Context, r *Report, k, pid int) error {
	gaugeNames := []string{"go_goroutines", "go_memstats_heap_inuse_bytes"}
	before, err := b.rssSettled(ctx, pid)
	if err != nil {
		return err
	}
	gBefore, gErr := b.gauges(ctx, gaugeNames...)
	var conns []*realtimeclient.Conn
	defer func() {
		for _, c := range conns {
			c.Close(websocket.StatusNormalClosure, "")
		}
	}()
	for i := range k {
		conn, err := b.open(ctx)
		if err != nil {
			if i == 0 {
				return err
			}
			r.Notes = append(r.Notes, fmt.Sprintf("idle: only %d conversations opened (%v)", i, err))
			break
		}
		conns = append(conns, conn)
		if err := b.configure(ctx, conn); err != nil {
			return err
		}
	}
	after, err := b.rssSettled(ctx, pid)
	if err != nil {
		return err
	}
	src := "/v1/speech/health processResidentBytes"
	if pid > 0 {
		src = fmt.Sprintf("/proc/%d/status VmRSS", pid)
	}
	n := float64(len(conns))
	r.Values["idle conversations open"] = n
	r.Values["idle: server resident MiB before"] = float64(before) / (1 << 20)
	r.Values["idle: server resident MiB with them"] = float64(after) / (1 << 20)
	if n > 0 {
		r.Values["idle: resident KiB per conversation"] = float64(after-before) / n / 1024
		if gAfter, err := b.gauges(ctx, gaugeNames...); gErr == nil && err == nil {
			if a, ok := gAfter["go_goroutines"]; ok {
				r.Values["idle: goroutines per conversation"] = (a - gBefore["go_goroutines"]) / n
			}
			if a, ok := gAfter["go_memstats_heap_inuse_bytes"]; ok {
				r.Values["idle: Go heap in use KiB per conversation"] = (a - gBefore["go_memstats_heap_inuse_bytes"]) / n / 1024
			}
		}
	}
	r.Notes = append(r.Notes, "idle: resident bytes from "+src+", median of 5 reads 200 ms apart, measured first (before any turn); Go keeps freed heap mapped, so the RSS delta is noisy at this size — the heap and goroutine deltas come from /metrics")
	return nil
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

// rampLevels are the ramp's concurrency levels: those listed (ascending, each 1..256), else 1, 2,
// 4 … up to max.
func rampLevels(list string, max int) ([]int, error) {
	var levels []int
	if list == "" {
		for conc := 1; conc <= max; conc *= 2 {
			levels = append(levels, conc)
		}
		return levels, nil
	}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 256 || (len(levels) > 0 && n <= levels[len(levels)-1]) {
			return nil, fmt.Errorf("-ramp-levels %q: ascending whole numbers 1..256", list)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

// ramp raises the number of concurrent conversations until the answer latency p95 doubles
// against base (the single-conversation p95; the first level's when base < 0).
func (b *converseBench) ramp(ctx context.Context, r *Report, levels []int, turns int, base float64) {
	best := 0
	doubled := false
	var lastWall time.Duration
	for i, conc := range levels {
		if ctx.Err() != nil {
			break
		}
		busiest := i == len(levels)-1
		s := &Series{Name: fmt.Sprintf("answer latency, %d concurrent", conc), Unit: "ms"}
		after := &Series{Name: fmt.Sprintf("  after speech_stopped, %d concurrent", conc), Unit: "ms"}
		wait := &Series{Name: fmt.Sprintf("  turn wait (→ speech_stopped), %d concurrent", conc), Unit: "ms"}
		final := &Series{Name: fmt.Sprintf("  final decode (→ transcription.completed), %d concurrent", conc), Unit: "ms"}
		var wg sync.WaitGroup
		var refused atomic.Int64
		var convNanos atomic.Int64 // conversation-time held open at this level
		label := fmt.Sprintf("%d concurrent", conc)
		// The busiest level is profiled for about as long as the level before it took (the
		// same turns per conversation), so the profile covers the level and little else.
		var prof sync.WaitGroup
		if b.debugURL != nil && busiest && lastWall > 0 {
			prof.Go(func() {
				p, err := cpuProfile(ctx, b.debugURL, max(1, int(lastWall.Seconds())), b.profileOut)
				if err != nil {
					b.errors.add("cpu profile", err)
					return
				}
				stageShares(r, p, label)
			})
		}
		mark := b.cpuMark(ctx)
		waitsBefore, _ := b.histograms(ctx) // the server's Whisper queue waits over the level (none: an older server)
		levelStart := time.Now()
		for range conc {
			wg.Go(func() {
				began := time.Now()
				defer func() { convNanos.Add(int64(time.Since(began))) }()
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
						wait.AddDuration(t.stopped.Sub(t.stop))
					}
					if !t.transcribed.IsZero() && !t.stopped.IsZero() {
						final.AddDuration(t.transcribed.Sub(t.stopped))
					}
				}
			})
		}
		wg.Wait()
		lastWall = time.Since(levelStart)
		cpuPerConversation(r, label, mark, b.cpuMark(ctx), time.Duration(convNanos.Load()).Seconds())
		prof.Wait()
		r.add(s, wait, after, final)
		if waitsAfter, err := b.histograms(ctx); err == nil {
			queueWaits(r, label, waitsBefore, waitsAfter)
		}
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
			if !doubled {
				r.Notes = append(r.Notes, fmt.Sprintf("answer p95 doubled at %d concurrent (%.0f ms vs %.0f ms alone, the latency phase's p95)", conc, sum.P95, base))
			}
			doubled = true
			if !b.rampThrough {
				break
			}
			continue
		}
		if doubled {
			continue // -ramp-through: measured past the first doubling; the capacity stays the level before it
		}
		best = conc
		if busiest {
			r.Notes = append(r.Notes, fmt.Sprintf("answer p95 had not doubled at %d concurrent, the most tried: the capacity is at least that", conc))
		}
	}
	r.Values["conversations before answer p95 doubles (max tried that held)"] = float64(best)
	r.Values["  per core of this machine (bench client on the same cores)"] = float64(best) / float64(runtime.NumCPU())
}

// queueWaits reports the server's Whisper queue wait over one ramp level, per kind (final,
// partial): the mean and the bucket bound under which 95 % of the waits fell
// (voiced_whisper_queue_wait_seconds, absent on a server without it).
func queueWaits(r *Report, label string, before, after map[string]histogram) {
	for _, kind := range []string{"final", "partial"} {
		k := `voiced_whisper_queue_wait_seconds{kind="` + kind + `"}`
		a, ok := after[k]
		b := before[k]
		if !ok || a.count-b.count <= 0 {
			continue
		}
		n := a.count - b.count
		r.Values[fmt.Sprintf("Whisper queue wait %s, %s: mean ms (n=%.0f)", kind, label, n)] = (a.sum - b.sum) / n * 1000
		r.Values[fmt.Sprintf("Whisper queue wait %s, %s: p95 ≤ ms (bucket bound)", kind, label)] = a.quantileBound(b, 0.95) * 1000
	}
}
