package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func sample(fns ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1}}
	for _, fn := range fns {
		s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: fn}}}})
	}
	return s
}

// Each sample goes to the first stage matching a frame from the leaf up: what the leaf is
// (allocation, a cgo call) is charged to the stage that asked for it.
func TestStageOf(t *testing.T) {
	tests := []struct {
		stack []string // leaf first
		want  string
	}{
		{[]string{"runtime.mallocgc", "encoding/json.Marshal", "github.com/voiced/voiced/session.(*outbox).send"}, "JSON / base64"},
		{[]string{"runtime.cgocall", "github.com/yalue/onnxruntime_go.(*DynamicAdvancedSession).Run", "github.com/voiced/voiced/speechcore/whisper.(*model).transcribe"}, "Whisper model + decode loop"},
		{[]string{"runtime.cgocall", "github.com/yalue/onnxruntime_go.(*AdvancedSession).Run", "github.com/voiced/voiced/speechcore/squelch.(*Stream).Push"}, "VAD / turn detection"},
		{[]string{"github.com/voiced/voiced/audio.stockham", "github.com/voiced/voiced/audio.(*Mel).frames", "github.com/voiced/voiced/speechcore/whisper.(*Engine).Transcribe"}, "log-mel (partials and finals)"},
		{[]string{"github.com/voiced/voiced/audio.(*Resampler).Process", "github.com/voiced/voiced/session.(*inputBuffer).append"}, "resampling"},
		{[]string{"syscall.Syscall", "internal/poll.(*FD).Write", "net.(*conn).Write", "github.com/coder/websocket.(*Conn).Write", "github.com/voiced/voiced/door.(*Writer).Run"}, "network syscalls"},
		{[]string{"github.com/voiced/voiced/audio.dot", "github.com/voiced/voiced/audio.(*Resampler).emit", "github.com/voiced/voiced/session.(*inputBuffer).append"}, "resampling"},
		{[]string{"github.com/voiced/voiced/audio.Encoding.Decode", "github.com/voiced/voiced/session.decodeInput"}, "audio codecs (PCM, G.711)"},
		{[]string{"runtime.mallocgc", "github.com/voiced/voiced/session.(*conversation).handle"}, "conversation (session)"},
		{[]string{"runtime.gcBgMarkWorker"}, "GC (background)"},
		{[]string{"github.com/voiced/voiced/meter.(*Meter).Record"}, "metering"},
		{[]string{"runtime.futex", "runtime.findRunnable", "runtime.schedule"}, "scheduler / runtime"},
		{[]string{"crypto/sha256.block"}, "other"},
	}
	for _, tc := range tests {
		if got := stageOf(sample(tc.stack...)); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.stack, got, tc.want)
		}
	}
}

// The CPU per conversation-second is the server's and the client's CPU between two marks over
// the conversation-seconds held; the mean Silero batch is the windows over the runs between
// them, left out when the server has no such counters or ran none.
func TestCPUPerConversation(t *testing.T) {
	r := &Report{Values: map[string]float64{}}
	before := cpuMark{server: 10, client: 1, ok: true, sileroRuns: 100, sileroWindows: 150, sileroOK: true}
	after := cpuMark{server: 12, client: 1.5, ok: true, sileroRuns: 300, sileroWindows: 950, sileroOK: true}
	cpuPerConversation(r, "16 concurrent", before, after, 40)
	for name, want := range map[string]float64{
		"server CPU s per conversation-second, 16 concurrent":                    0.05,
		"  bench client CPU s per conversation-second, 16 concurrent":            0.0125,
		"  Silero windows per run (batched across conversations), 16 concurrent": 4,
	} {
		if got, ok := r.Values[name]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	r = &Report{Values: map[string]float64{}}
	old := cpuMark{server: 10, ok: true}
	cpuPerConversation(r, "1 concurrent", old, cpuMark{server: 11, ok: true}, 10)
	cpuPerConversation(r, "2 concurrent", before, cpuMark{server: 11, ok: true, sileroRuns: 100, sileroWindows: 150, sileroOK: true}, 10)
	for name := range r.Values {
		if strings.Contains(name, "Silero") {
			t.Errorf("%s reported without counters or runs: %v", name, r.Values[name])
		}
	}
}

// The ramp doubles up to -ramp-max unless -ramp-levels lists its levels (ascending, 1..256).
func TestRampLevels(t *testing.T) {
	for _, tc := range []struct {
		list string
		max  int
		want []int
	}{
		{"", 16, []int{1, 2, 4, 8, 16}},
		{"", 20, []int{1, 2, 4, 8, 16}},
		{"", 0, nil},
		{"64, 96,128", 0, []int{64, 96, 128}},
	} {
		got, err := rampLevels(tc.list, tc.max)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("rampLevels(%q, %d) = %v, %v; want %v", tc.list, tc.max, got, err, tc.want)
		}
	}
	for _, bad := range []string{"64,32", "0", "300", "a", "8,8"} {
		if _, err := rampLevels(bad, 4); err == nil {
			t.Errorf("rampLevels(%q) accepted", bad)
		}
	}
}
