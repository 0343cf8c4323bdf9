package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

type transcribeDelta struct {
	Type         string   `json:"type"`
	Segment      int      `json:"segment"`
	Kind         string   `json:"kind"`
	Text         string   `json:"text"`
	T0Ms         float64  `json:"t0Ms"`
	T1Ms         float64  `json:"t1Ms"`
	DecodeMs     float64  `json:"decodeMs"`
	FirstTokenMs *float64 `json:"firstTokenMs"`
	Name         string   `json:"name"`
	Message      string   `json:"message"`
}

type transcribeBench struct {
	c      *common
	recs   []recording
	paced  bool
	errors errCounter

	firstServer, firstClient, decodePartial, decodeFinal, lag, finalAfterEnd *Series

	mu         sync.Mutex
	audioS     float64 // seconds of audio streamed (completed sessions)
	sessions   int
	cadenceMs  float64
	sessionsWS []float64
}

func runTranscribe(ctx context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("transcribe", flag.ContinueOnError)
	c.register(fs)
	n := fs.Int("n", 2, "concurrent sessions")
	dur := fs.Duration("duration", 20*time.Second, "start no new session after this long")
	maxSessions := fs.Int("sessions", 100, "at most this many sessions in all")
	paced := fs.Bool("paced", true, "send in real time (20 ms frames, paced); false: as fast as the socket takes them")
	var files stringList
	fs.Var(&files, "audio", "a speech file (.pcm float32 LE 16 kHz, or .wav); repeatable. Default: $VOICED_SILERO_TESTFILES/*.pcm")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 256 || *maxSessions < 1 || *maxSessions > 10000 || *dur <= 0 {
		return errors.New("-n must be 1..256, -sessions 1..10000, -duration > 0")
	}
	recs, err := loadRecordings(files, os.Getenv("VOICED_SILERO_TESTFILES"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	b := &transcribeBench{c: &c, recs: recs, paced: *paced,
		firstServer: &Series{Name: "firstTokenMs (server)", Unit: "ms",
			Note: "the server's firstTokenMs: first audio byte read → first delta ready"},
		firstClient: &Series{Name: "firstToken (client)", Unit: "ms",
			Note: "first audio frame sent → first delta received"},
		decodePartial: &Series{Name: "decodeMs partial", Unit: "ms"},
		decodeFinal:   &Series{Name: "decodeMs final", Unit: "ms"},
		lag: &Series{Name: "partial lag", Unit: "ms",
			Note: "partial received − when its last sample (t1Ms) was sent; paced, this is how far captions trail the speaker"},
		finalAfterEnd: &Series{Name: "final after end", Unit: "ms", Note: `{"type":"end"} sent → final received`},
	}
	start := time.Now()
	deadline := start.Add(*dur)
	var wg sync.WaitGroup
	var mu sync.Mutex
	started := 0
	for w := range *n {
		wg.Go(func() {
			for i := w; ; i += *n {
				mu.Lock()
				if started >= *maxSessions || time.Now().After(deadline) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				started++
				mu.Unlock()
				if err := b.session(ctx, b.recs[i%len(b.recs)]); err != nil {
					b.errors.add("session", err)
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	r := newReport("transcribe", map[string]any{"n": *n, "paced": *paced, "duration": dur.String(),
		"recordings": len(recs), "url": c.base.String()})
	r.WallS = wall.Seconds()
	if err := r.add(b.firstServer, b.firstClient, b.decodePartial, b.decodeFinal, b.lag, b.finalAfterEnd); err != nil {
		return err
	}
	r.Values["sessions completed"] = float64(b.sessions)
	r.Values["audio seconds streamed"] = b.audioS
	r.Values["audio seconds per wall second (all sessions)"] = b.audioS / wall.Seconds()
	r.Values["partialCadenceMs (server)"] = b.cadenceMs
	b.errors.into(r)
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		r.Notes = append(r.Notes, "the run hit -timeout")
	}
	return r.write(&c)
}

// session streams one recording on a fresh socket (so each gives a firstTokenMs), ends the
// segment and waits for its final.
func (b *transcribeBench) session(ctx context.Context, rec recording) error {
	sctx, cancel := context.WithTimeout(ctx, time.Duration(len(rec.pcm))*time.Second/rate16k*3+30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(sctx, b.c.ws("/v1/transcribe"), &websocket.DialOptions{HTTPHeader: b.c.authHeader()})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("dial: %s", resp.Status)
		}
		return fmt.Errorf("dial: %w", err)
	}
	var reader sync.WaitGroup
	defer func() { conn.CloseNow(); reader.Wait() }()
	var ready struct {
		Type             string  `json:"type"`
		PartialCadenceMs float64 `json:"partialCadenceMs"`
	}
	if err := readJSON(sctx, conn, &ready); err != nil || ready.Type != "ready" {
		return fmt.Errorf("no ready frame: %v %q", err, ready.Type)
	}
	b.mu.Lock()
	b.cadenceMs = ready.PartialCadenceMs
	b.mu.Unlock()

	// sentAt[i] is when frame i (20 ms) was handed to the socket; the reader reads it to
	// measure lags, so it is guarded.
	const fl = rate16k * frameMs / 1000
	frames := (len(rec.pcm) + fl - 1) / fl
	var smu sync.Mutex
	sentAt := make([]time.Time, 0, frames)
	var endSent time.Time
	finalDone := make(chan error, 1)
	reader.Go(func() {
		first := true
		for {
			var d transcribeDelta
			if err := readJSON(sctx, conn, &d); err != nil {
				finalDone <- err
				return
			}
			now := time.Now()
			switch d.Type {
			case "error":
				finalDone <- fmt.Errorf("server error %s: %s", d.Name, d.Message)
				return
			case "delta":
			default:
				continue
			}
			smu.Lock()
			t0 := time.Time{}
			if len(sentAt) > 0 {
				t0 = sentAt[0]
			}
			last := int((d.T1Ms*rate16k/1000 + fl - 1) / fl) // frames holding samples up to t1
			var t1 time.Time
			if last > 0 && last <= len(sentAt) {
				t1 = sentAt[last-1]
			}
			end := endSent
			smu.Unlock()
			if first {
				first = false
				if d.FirstTokenMs != nil {
					b.firstServer.Add(*d.FirstTokenMs)
				}
				if !t0.IsZero() {
					b.firstClient.AddDuration(now.Sub(t0))
				}
			}
			if d.Kind == "final" {
				b.decodeFinal.Add(d.DecodeMs)
				if !end.IsZero() {
					b.finalAfterEnd.AddDuration(now.Sub(end))
				}
				finalDone <- nil
				return
			}
			b.decodePartial.Add(d.DecodeMs)
			if !t1.IsZero() {
				b.lag.AddDuration(now.Sub(t1))
			}
		}
	})

	start := time.Now()
	for i := range frames {
		if b.paced {
			if wait := time.Until(start.Add(time.Duration(i*frameMs) * time.Millisecond)); wait > 0 {
				select {
				case <-time.After(wait):
				case <-sctx.Done():
					return sctx.Err()
				}
			}
		}
		chunk := pcm16Bytes(rec.pcm[i*fl : min((i+1)*fl, len(rec.pcm))])
		smu.Lock()
		sentAt = append(sentAt, time.Now())
		smu.Unlock()
		if err := conn.Write(sctx, websocket.MessageBinary, chunk); err != nil {
			return fmt.Errorf("write audio: %w", err)
		}
	}
	smu.Lock()
	endSent = time.Now()
	smu.Unlock()
	if err := conn.Write(sctx, websocket.MessageText, []byte(`{"type":"end"}`)); err != nil {
		return fmt.Errorf("write end: %w", err)
	}
	if err := <-finalDone; err != nil {
		return fmt.Errorf("waiting for the final: %w", err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	b.mu.Lock()
	b.sessions++
	b.audioS += float64(len(rec.pcm)) / rate16k
	b.mu.Unlock()
	return nil
}

// readJSON reads the next text frame into v (binary frames are skipped).
func readJSON(ctx context.Context, conn *websocket.Conn, v any) error {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		if typ == websocket.MessageText {
			return json.Unmarshal(data, v)
		}
	}
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
