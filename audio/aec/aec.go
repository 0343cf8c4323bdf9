// Package aec cancels the echo of a known reference (the reply audio voiced sent) from a
// microphone stream and suppresses stationary noise, through libspeexdsp (Debian
// libspeexdsp-dev): Speex's multi-delay block frequency-domain echo canceller
// (speex_echo_*) and its preprocessor (speex_preprocess_*: noise suppression and the residual
// echo suppressor that follows the canceller).
//
// A Filter is one stream's: Process runs on one goroutine (the conversation's input goroutine);
// Far and DropFar may be called from any goroutine (the reply's writer queues what it sent).
// The reference is consumed at the pace of the microphone: each sample the microphone brings
// takes one sample of reference, silence when none is queued, which is how a client's player
// plays a reply queued faster than real time. It is also a wall-clock schedule: a client plays
// what it was sent in real time from when it was sent (after what it was already playing), so
// when microphone audio arrives, the reference that finished playing more than the tail before
// that audio began is dropped, not matched against it: a half-duplex (push-to-talk) client that
// took a reply in a burst and sent no microphone audio while it played is not cleaned against
// the reply once it speaks. The echo may lag the reference by up to the tail (Config.TailMs): a
// client's playback buffer, the room, the capture buffer and the network.
package aec

/*
#cgo pkg-config: speexdsp webrtc-audio-processing
#cgo CXXFLAGS: -std=c++11
#cgo LDFLAGS: -lstdc++
#include <stdlib.h>
#include "webrtc_shim.h"
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>

static int pp_ctl_int(SpeexPreprocessState *st, int req, int v) {
	return speex_preprocess_ctl(st, req, &v);
}
static int pp_set_echo(SpeexPreprocessState *st, SpeexEchoState *e) {
	return speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_ECHO_STATE, e);
}
static int echo_set_rate(SpeexEchoState *e, int rate) {
	return speex_echo_ctl(e, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"
)

// Rate is the only rate a Filter works at: the rate voiced hears at (the session's timeline).
const Rate = 16000

// FrameSamples is the frame the canceller and the preprocessor work on: 10 ms at Rate. Process
// returns each sample one frame late: the Filter's added latency.
const FrameSamples = Rate / 100

// Latency is the delay Process adds, in samples at Rate (one frame).
const Latency = FrameSamples

// MaxFar bounds the reference queued ahead of the microphone (samples at Rate): a WebSocket
// reply is sent faster than real time, and a client plays at most this much of it before the
// microphone catches up; what is queued past it is not cancelled.
const MaxFar = 120 * Rate

// Noise suppression levels (dB, Speex's SPEEX_PREPROCESS_SET_NOISE_SUPPRESS): how far the
// preprocessor lowers what it estimates as noise.
const (
	SuppressNearField = -15 // a close microphone (headset, phone at the ear): speech well above the noise
	SuppressFarField  = -25 // a far microphone (a laptop, a room): the noise closer to the speech
)

// Config says what a Filter does. A zero Config passes audio through (one frame late).
type Config struct {
	// Echo: cancel the reference queued with Far from the microphone.
	Echo bool
	// TailMs is the longest echo path the canceller models (ms): the delay between the
	// reference and its echo in the microphone plus the room's reverberation. 0: DefaultTailMs.
	TailMs int
	// SuppressDB (negative dB) turns the preprocessor's noise suppression on; 0: off.
	SuppressDB int
	// Engine is the library: WebRTC (the default: measured, see LLM.md) or Speex.
	Engine Engine
	// Guard: the residual-echo gate that uses the known reference (on unless NoGuard). The
	// reference is first delayed by the echo's bulk delay, estimated from the correlation of
	// the reference's and the microphone's energy envelopes (the canceller gets it aligned
	// too). While the reference has been active within the tail, an output frame passes only
	// when the microphone holds more than the echo explains: per frequency band (18, about a
	// third of an octave), the aligned reference's loudest power over the tail times the
	// band's echo path gain (learned from the frames the canceller cancels, 0 dB until it has
	// learned it), lowered by GuardMarginDB; other frames are attenuated by GuardDepthDB. A
	// double-talk test on the microphone with the known reference: it needs no converged
	// filter, so it covers a reply's start (the filter still learning the room) and a filter
	// that diverges mid-reply, and the canceller's suppressor, which hides double talk in its
	// output, does not hide the talker from it.
	NoGuard bool
	// GuardMarginDB: how far over the echo estimate a talker must be to pass (dB; negative: how
	// far under it). 0: DefaultGuardMarginDB. Measured on the corpus (LLM.md): every margin
	// from −3.5 to +1.5 dB stops every self-voice barge-in and hears 20/20 talkers over the echo
	// in time; −2 dB (the default) hears quieter talkers best within that range.
	GuardMarginDB float64
}

// Residual-echo gate defaults (measured on the self-voice corpus: LLM.md).
const (
	DefaultGuardMarginDB = -2.0
	GuardDepthDB         = -120.0
	// guardFloor: a reference frame under this mean square (−60 dBFS) is silence.
	guardFloor = 1e-6
	// guardHoldFrames: how long the gate stays open after a talker's frame (a double-talk
	// detector's hangover), so the quieter parts of their words pass with the loud ones.
	guardHoldFrames = 30
	// erlLearnFrames: echo-only frames a band needs before the gate trusts its echo path gain.
	erlLearnFrames = 50
	// maxEchoGainDB bounds a learned echo path gain (a loudspeaker louder than the reference).
	maxEchoGainDB = 6
	// quietEchoGain is the echo path gain (−30 dB as a power ratio) the gate assumes for a band
	// it has not learned while the delay estimator finds no echo at all (delayEst.noEcho): a
	// headphone user's or an echo-cancelling client's speech quieter than the reply passes,
	// where the 0 dB a band starts at withheld it as the reply's echo.
	quietEchoGain = 1e-3
	// noiseRise: how fast a band's noise floor follows the microphone up (per frame, ×; it
	// follows down at once): about 4 dB a second.
	noiseRise = 1.01
)

// Engine names the library a Filter runs.
type Engine int

const (
	WebRTC Engine = iota // libwebrtc-audio-processing 0.3: AEC (normal filter, delay-agnostic) and NS
	Speex                // libspeexdsp: speex_echo_* and speex_preprocess_*
)

// DefaultTailMs covers a client's playback and capture buffers over a network (~100–200 ms) and
// a room's reverberation.
const DefaultTailMs = 400

// ErrConfig is a Config a Filter cannot be made with.
var ErrConfig = errors.New("aec: bad config")

// Filter is one microphone stream's echo canceller and noise suppressor.
type Filter struct {
	cfg  Config
	echo *C.SpeexEchoState
	pp   *C.SpeexPreprocessState
	wap  *C.wap

	mu      sync.Mutex
	far     []int16 // the reference queued (under mu); far[farHead:] is not yet consumed
	farHead int
	// The reference's wall-clock schedule (under mu): farAbs counts the samples consumed or
	// dropped since New (far[farHead]'s index in the whole stream), segs says when each run
	// queued by Far plays (oldest first), farEnd when the last queued sample finishes playing.
	farAbs int64
	segs   []farSeg
	farEnd time.Time
	now    func() time.Time

	// The residual-echo gate (frame's goroutine; guard.go) and the reference's alignment
	// (delay.go).
	guardOn   bool
	marginLin float64 // GuardMarginDB as a power ratio
	depthLin  float32
	dl        *delayEst // the echo's bulk delay, and the reference delayed by it
	rawRing   []float64 // the raw reference's frame energies over the tail (is it active?)
	rawAt     int
	rs, ms    *spec             // the aligned reference's and the microphone's band powers
	bRing     [][nBands]float64 // the aligned reference's band powers over the tail
	eRing     []float64         // and its frame energies (mean square)
	ringAt    int
	pk        [nBands]float64 // their maximum over the tail (this frame)
	peak      float64         // the aligned reference's loudest frame over the tail (mean square)
	gDB       [nBands]float64 // the echo path's gain per band (dB, upper envelope of mic/pk)
	gLin      [nBands]float64 // the same as a power ratio, 1 until learned
	gN        [nBands]int     // echo-only frames each band learned from
	noise     [nBands]float64 // the microphone's noise floor per band
	near      bool            // this frame: the microphone holds more than the echo explains
	hold      int             // frames the gate stays open after a near frame

	in  []int16   // microphone samples waiting for a whole frame
	out []float32 // processed samples not yet returned (starts with one frame of silence)
	ref []int16   // one frame of reference, aligned (scratch)
	raw []int16   // one frame of reference as queued (scratch)
	buf []int16   // one frame of output (scratch)
}

// New makes a Filter; Close frees it.
func New(cfg Config) (*Filter, error) {
	if cfg.TailMs == 0 {
		cfg.TailMs = DefaultTailMs
	}
	if cfg.TailMs < 10 || cfg.TailMs > 2000 || cfg.SuppressDB > 0 || cfg.SuppressDB < -60 {
		return nil, fmt.Errorf("%w: tail %d ms (10–2000), suppression %d dB (−60–0)", ErrConfig, cfg.TailMs, cfg.SuppressDB)
	}
	if cfg.GuardMarginDB == 0 {
		cfg.GuardMarginDB = DefaultGuardMarginDB
	}
	f := &Filter{cfg: cfg, out: make([]float32, FrameSamples, 4*FrameSamples),
		ref: make([]int16, FrameSamples), buf: make([]int16, FrameSamples), now: time.Now}
	if cfg.Echo {
		tail := max(cfg.TailMs/10, 1)
		f.raw = make([]int16, FrameSamples)
		f.dl = newDelayEst(tail)
		f.rawRing = make([]float64, tail)
		f.rs, f.ms = newSpec(), newSpec()
		f.bRing = make([][nBands]float64, tail)
		f.eRing = make([]float64, tail)
		for b := range nBands {
			f.noise[b], f.gLin[b] = 1e-9, 1
		}
	}
	if cfg.Echo && !cfg.NoGuard {
		f.guardOn = true
		f.marginLin = math.Pow(10, cfg.GuardMarginDB/10)
		f.depthLin = float32(math.Pow(10, GuardDepthDB/20))
	}
	if cfg.Engine == WebRTC {
		// NS levels 0–3 (low … very high): near field −15 dB → moderate (1), far field → high (2).
		ns := -1
		switch {
		case cfg.SuppressDB != 0 && cfg.SuppressDB > -20:
			ns = 1
		case cfg.SuppressDB != 0:
			ns = 2
		}
		echo := 0
		if cfg.Echo {
			echo = 1
		}
		f.wap = C.wap_new(C.int(Rate), C.int(echo), C.int(ns), 0)
		if f.wap == nil {
			return nil, fmt.Errorf("aec: webrtc AudioProcessing::Create failed")
		}
		return f, nil
	}
	if cfg.Echo {
		f.echo = C.speex_echo_state_init(C.int(FrameSamples), C.int(cfg.TailMs*Rate/1000))
		if f.echo == nil {
			return nil, fmt.Errorf("aec: speex_echo_state_init failed")
		}
		C.echo_set_rate(f.echo, C.int(Rate))
	}
	if cfg.Echo || cfg.SuppressDB != 0 {
		f.pp = C.speex_preprocess_state_init(C.int(FrameSamples), C.int(Rate))
		if f.pp == nil {
			f.Close()
			return nil, fmt.Errorf("aec: speex_preprocess_state_init failed")
		}
		denoise := 0
		if cfg.SuppressDB != 0 {
			denoise = 1
			C.pp_ctl_int(f.pp, C.SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, C.int(cfg.SuppressDB))
		}
		C.pp_ctl_int(f.pp, C.SPEEX_PREPROCESS_SET_DENOISE, C.int(denoise))
		C.pp_ctl_int(f.pp, C.SPEEX_PREPROCESS_SET_AGC, 0)
		C.pp_ctl_int(f.pp, C.SPEEX_PREPROCESS_SET_DEREVERB, 0)
		if f.echo != nil {
			// The residual echo suppressor: what the linear filter leaves.
			C.pp_set_echo(f.pp, f.echo)
		}
	}
	return f, nil
}

// Config is what f was made with (TailMs filled in).
func (f *Filter) Config() Config { return f.cfg }

// Close frees the library's state. f is not used after.
func (f *Filter) Close() {
	if f.wap != nil {
		C.wap_free(f.wap)
		f.wap = nil
	}
	if f.pp != nil {
		C.speex_preprocess_state_destroy(f.pp)
		f.pp = nil
	}
	if f.echo != nil {
		C.speex_echo_state_destroy(f.echo)
		f.echo = nil
	}
}

// farSeg is one run of reference queued by Far: abs is its first sample's index in the whole
// stream, at when that sample plays.
type farSeg struct {
	abs int64
	at  time.Time
}

// SetClock replaces the wall clock the reference's schedule runs on (time.Now): for a
// simulation that feeds the microphone faster than real time as if it were real time. Call it
// before any Far or Process.
func (f *Filter) SetClock(now func() time.Time) { f.now = now }

// Far queues reference audio (Rate, [-1, 1]): what the client is about to play, in the order
// it plays, starting now or when what it was sent before finishes playing, whichever is later.
// Safe from any goroutine. Past MaxFar queued, the rest is not queued.
func (f *Filter) Far(pcm []float32) {
	if !f.cfg.Echo || len(pcm) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.farHead > 0 && f.farHead >= len(f.far)/2 {
		f.far = append(f.far[:0], f.far[f.farHead:]...)
		f.farHead = 0
	}
	n := min(len(pcm), MaxFar-(len(f.far)-f.farHead))
	if n <= 0 {
		return
	}
	at := f.now()
	if f.farEnd.After(at) {
		at = f.farEnd
	}
	f.segs = append(f.segs, farSeg{abs: f.farAbs + int64(len(f.far)-f.farHead), at: at})
	f.farEnd = at.Add(samplesDur(n))
	for _, v := range pcm[:n] {
		f.far = append(f.far, toInt16(v))
	}
}

// DropFar forgets the reference not yet consumed: the client dropped the audio it had not
// played (a barge-in, a clear). Safe from any goroutine.
func (f *Filter) DropFar() {
	f.mu.Lock()
	f.farAbs += int64(len(f.far) - f.farHead)
	f.far, f.farHead = f.far[:0], 0
	f.segs, f.farEnd = f.segs[:0], time.Time{}
	f.mu.Unlock()
}

func samplesDur(n int) time.Duration { return time.Duration(n) * time.Second / Rate }

// dropPlayed drops the reference that finished playing more than the tail before microphone
// audio of n samples, arriving now, began: the client played it while sending no microphone
// audio, so no echo of it is in what comes.
func (f *Filter) dropPlayed(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.segs) == 0 {
		return
	}
	cutoff := f.now().Add(-samplesDur(n) - time.Duration(f.cfg.TailMs)*time.Millisecond)
	for len(f.segs) > 0 {
		s := f.segs[0]
		end := f.farAbs + int64(len(f.far)-f.farHead)
		if len(f.segs) > 1 {
			end = f.segs[1].abs
		}
		head := s.at.Add(samplesDur(int(f.farAbs - s.abs)))
		if !head.Before(cutoff) {
			return
		}
		k := min(int64((cutoff.Sub(head)*Rate+time.Second-1)/time.Second), end-f.farAbs)
		f.farHead += int(k)
		f.farAbs += k
		if f.farAbs < end {
			return
		}
		f.segs = f.segs[1:]
	}
	if f.farHead == len(f.far) {
		f.far, f.farHead = f.far[:0], 0
	}
}

// FarQueued is the reference queued and not yet consumed, in samples.
func (f *Filter) FarQueued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.far) - f.farHead
}

// Process takes microphone audio (Rate, [-1, 1]) and returns as many samples, cleaned, one
// frame late (Latency). The returned slice is f's until the next call.
func (f *Filter) Process(mic []float32) []float32 {
	if f.cfg.Echo {
		f.dropPlayed(len(mic))
	}
	for _, v := range mic {
		f.in = append(f.in, toInt16(v))
	}
	for len(f.in) >= FrameSamples {
		f.frame(f.in[:FrameSamples])
		f.in = append(f.in[:0], f.in[FrameSamples:]...)
	}
	n := len(mic)
	res := append([]float32(nil), f.out[:n]...)
	f.out = append(f.out[:0], f.out[n:]...)
	return res
}

// frame runs one frame of microphone audio through the canceller and the preprocessor.
func (f *Filter) frame(mic []int16) {
	out := f.buf
	if f.wap != nil {
		var ref *C.int16_t
		if f.cfg.Echo {
			f.nextRef(mic)
			ref = (*C.int16_t)(unsafe.Pointer(&f.ref[0]))
		}
		C.wap_frame(f.wap, (*C.int16_t)(unsafe.Pointer(&mic[0])), ref, (*C.int16_t)(unsafe.Pointer(&out[0])), 0)
	} else if f.echo != nil {
		f.nextRef(mic)
		C.speex_echo_cancellation(f.echo, (*C.spx_int16_t)(unsafe.Pointer(&mic[0])),
			(*C.spx_int16_t)(unsafe.Pointer(&f.ref[0])), (*C.spx_int16_t)(unsafe.Pointer(&out[0])))
	} else {
		copy(out, mic)
	}
	if f.pp != nil {
		C.speex_preprocess_run(f.pp, (*C.spx_int16_t)(unsafe.Pointer(&out[0])))
	}
	gain := f.guard(mic, out)
	for _, v := range out {
		f.out = append(f.out, float32(v)/32768*gain)
	}
}

func meanSquare(x []int16) float64 {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return e / float64(len(x)) / (32768 * 32768)
}

// takeFar moves one frame of reference into dst, silence where none is queued.
func (f *Filter) takeFar(dst []int16) {
	f.mu.Lock()
	n := copy(dst, f.far[f.farHead:])
	f.farHead += n
	f.farAbs += int64(n)
	for len(f.segs) > 1 && f.segs[1].abs <= f.farAbs {
		f.segs = f.segs[1:]
	}
	if f.farHead == len(f.far) {
		f.far, f.farHead = f.far[:0], 0
		f.segs = f.segs[:0]
	}
	f.mu.Unlock()
	clear(dst[n:])
}

func toInt16(v float32) int16 {
	x := v * 32767
	if x > 32767 {
		return 32767
	}
	if x < -32768 {
		return -32768
	}
	return int16(x)
}
