package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
)

// Where the CPU goes: the server's CPU seconds per conversation-second at each ramp level (its
// process_cpu_seconds_total on /metrics, so the bench's own CPU is not in it; the bench's is
// reported beside it from getrusage), and, with -debug-url, a CPU profile of the server taken
// during the busiest level and split by stage.

// cpuMark is one reading of both processes' CPU time.
type cpuMark struct {
	server float64 // seconds, the server's process_cpu_seconds_total
	client float64 // seconds, this process's user + system time
	ok     bool    // the server's figure was read
	// sileroRuns, sileroWindows: the server's voiced_silero_runs_total and _windows_total
	// (sileroOK false: an older server without them).
	sileroRuns, sileroWindows float64
	sileroOK                  bool
}

func (b *converseBench) cpuMark(ctx context.Context) cpuMark {
	var m cpuMark
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if g, err := b.gauges(ctx, "process_cpu_seconds_total", "voiced_silero_runs_total", "voiced_silero_windows_total"); err == nil {
		m.server, m.ok = g["process_cpu_seconds_total"]
		var okRuns, okWindows bool
		m.sileroRuns, okRuns = g["voiced_silero_runs_total"]
		m.sileroWindows, okWindows = g["voiced_silero_windows_total"]
		m.sileroOK = okRuns && okWindows
	}
	return m
}

// cpuPerConversation reports the CPU both processes spent between two marks per second of
// conversation held open in that time (convSeconds: the sum of every conversation's duration).
func cpuPerConversation(r *Report, label string, before, after cpuMark, convSeconds float64) {
	if convSeconds <= 0 {
		return
	}
	if before.ok && after.ok {
		r.Values["server CPU s per conversation-second, "+label] = (after.server - before.server) / convSeconds
	}
	r.Values["  bench client CPU s per conversation-second, "+label] = (after.client - before.client) / convSeconds
	if runs := after.sileroRuns - before.sileroRuns; before.sileroOK && after.sileroOK && runs > 0 {
		r.Values["  Silero windows per run (batched across conversations), "+label] = (after.sileroWindows - before.sileroWindows) / runs
	}
}

// stages name where a CPU sample was spent: the first rule matching a frame, from the leaf up,
// wins, so allocation or a syscall is charged to the stage that called it when no rule names
// the callee itself (ONNX Runtime's calls are charged to the model that made them). Patterns
// are substrings of the frame's function name. A broad stage (a whole package) is tried only when no narrow one matched anywhere on the stack:
// audio.dot called by the Resampler is resampling, not "audio".
var stages = []struct {
	name     string
	patterns []string
	broad    bool
}{
	{"GC (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}, false},
	{"JSON / base64", []string{"encoding/json.", "encoding/base64.", "/voiced/wire."}, false},
	{"socket writes", []string{"coder/websocket.(*Conn).Write", "coder/websocket.(*msgWriter", "/voiced/door.(*Writer)"}, false},
	{"socket reads", []string{"coder/websocket.(*Conn).Read", "coder/websocket.(*msgReader", "/voiced/door.ReadFrame"}, false},
	{"network syscalls", []string{"internal/poll.", "net.(*conn)", "net/http."}, false},
	{"resampling", []string{"/voiced/audio.(*Resampler)", "/voiced/audio.Resample"}, false},
	{"Opus", []string{"/voiced/audio/opus."}, false},
	{"WebRTC (pion)", []string{"github.com/pion/"}, false},
	{"log-mel (partials and finals)", []string{"/voiced/audio.(*Mel", "/voiced/audio.(*mel", "/voiced/audio.(*fft", "/voiced/audio.stockham", "/voiced/audio.reflectPad"}, false},
	{"Whisper model + decode loop", []string{"/voiced/speechcore/whisper."}, false},
	{"Kokoro + G2P", []string{"/voiced/speechcore/kokoro.", "/voiced/speechcore/g2p", "/voiced/sentence."}, false},
	{"VAD / turn detection", []string{"/voiced/speechcore/squelch.", "/voiced/turn.", "/voiced/speechcore.(*Silero"}, false},
	{"metering", []string{"/voiced/meter."}, false},
	{"audio codecs (PCM, G.711)", []string{"/voiced/audio."}, true},
	{"mind", []string{"/voiced/mind."}, true},
	{"conversation (session)", []string{"/voiced/session."}, true},
}

// runtimeStage is a sample no stage names anywhere on its stack whose leaf is the runtime's
// (the scheduler, timers, a cgo call nobody above named).
const runtimeStage = "scheduler / runtime"

func stageOf(s *profile.Sample) string {
	if st := namedStage(s); st != "" {
		return st
	}
	if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil &&
		strings.HasPrefix(s.Location[0].Line[0].Function.Name, "runtime.") {
		return runtimeStage
	}
	return "other"
}

// namedStage is the first narrow stage a frame of s matches, from the leaf up, else the first
// broad one; "" when none does.
func namedStage(s *profile.Sample) string {
	if st := matchStage(s, false); st != "" {
		return st
	}
	return matchStage(s, true)
}

func matchStage(s *profile.Sample, broad bool) string {
	for _, loc := range s.Location {
		// Inlined frames come first in Line: the innermost call.
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			fn := line.Function.Name
			for _, st := range stages {
				if st.broad != broad {
					continue
				}
				for _, p := range st.patterns {
					if strings.Contains(fn, p) {
						return st.name
					}
				}
			}
		}
	}
	return ""
}

// cpuProfile fetches a CPU profile of seconds from the server's profiling listener, and keeps
// it in the file save names (for go tool pprof) unless save is empty.
func cpuProfile(ctx context.Context, debugURL *url.URL, seconds int, save string) (*profile.Profile, error) {
	u := debugURL.JoinPath("/debug/pprof/profile")
	u.RawQuery = fmt.Sprintf("seconds=%d", seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("profile: %s: %s", resp.Status, body)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if save != "" {
		if err := os.WriteFile(save, raw, 0o644); err != nil {
			return nil, err
		}
	}
	return profile.ParseData(raw)
}

// stageShares adds each stage's share of the profile's CPU samples to r, and the profile's CPU
// seconds per second of wall time (how many cores the server kept busy).
func stageShares(r *Report, p *profile.Profile, label string) {
	cpuIdx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			cpuIdx = i
		}
	}
	if cpuIdx < 0 {
		return
	}
	by := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[cpuIdx]
		by[stageOf(s)] += v
		total += v
	}
	if total == 0 {
		return
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return by[names[i]] > by[names[j]] })
	for _, n := range names {
		r.Values[fmt.Sprintf("profile %s: %% of server CPU in %s", label, n)] = 100 * float64(by[n]) / float64(total)
	}
	if p.DurationNanos > 0 {
		r.Values[fmt.Sprintf("profile %s: server cores busy (CPU s per wall s)", label)] = float64(total) / float64(p.DurationNanos)
	}
	r.Notes = append(r.Notes, fmt.Sprintf("profile %s: a CPU profile from the server's --debug-addr during that level, each sample charged to the first stage whose pattern matches a frame from the leaf up (converse_cpu.go's stages; ONNX Runtime's time goes to the model that called it)", label))
}
