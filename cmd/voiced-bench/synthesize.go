package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// sentences are what the synthesize bench speaks: everyday lengths, one to three sentences.
var sentences = []string{
	"Hello there.",
	"The harbour was quiet that morning, and the boats lay still.",
	"Can you hear me now? Good. Let's begin.",
	"Turn left at the second light, then keep going for about two miles.",
	"I'm sorry, I didn't catch that. Could you say it again?",
	"The meeting moved to Thursday at three. Bring the draft and the numbers.",
	"Yes.",
	"It is warmer today than yesterday, but rain is expected by the evening.",
}

type synthFrame struct {
	Type         string   `json:"type"`
	Utterance    int      `json:"utterance"`
	Samples      int      `json:"samples"`
	DurationMs   float64  `json:"durationMs"`
	FirstFrameMs *float64 `json:"firstFrameMs"`
	Name         string   `json:"name"`
	Message      string   `json:"message"`
}

func runSynthesize(ctx context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("synthesize", flag.ContinueOnError)
	c.register(fs)
	n := fs.Int("n", 2, "concurrent sockets")
	dur := fs.Duration("duration", 20*time.Second, "send no new sentence after this long")
	maxUtt := fs.Int("utterances", 500, "at most this many utterances in all")
	voice := fs.String("voice", "", "voice (default: the server's)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 256 || *maxUtt < 1 || *maxUtt > 100000 || *dur <= 0 {
		return errors.New("-n must be 1..256, -utterances 1..100000, -duration > 0")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	firstServer := &Series{Name: "firstFrameMs (server)", Unit: "ms", Note: "the server's firstFrameMs: text arrived → first audio header ready"}
	firstClient := &Series{Name: "firstFrame (client)", Unit: "ms", Note: "text frame sent → first audio header received"}
	complete := &Series{Name: "utterance complete", Unit: "ms", Note: "text frame sent → utteranceComplete"}
	rtfS := &Series{Name: "real-time factor per utterance", Unit: "x", Note: "audio seconds / (sent → complete) seconds"}
	var errs errCounter
	var mu sync.Mutex
	var audioS float64
	utterances := 0
	claimed := 0
	start := time.Now()
	deadline := start.Add(*dur)
	var wg sync.WaitGroup
	for w := range *n {
		wg.Go(func() {
			q := ""
			if *voice != "" {
				q = "?voice=" + *voice
			}
			conn, resp, err := websocket.Dial(ctx, c.ws("/v1/synthesize"+q), &websocket.DialOptions{HTTPHeader: c.authHeader()})
			if err != nil {
				if resp != nil {
					err = errors.New(resp.Status)
				}
				errs.add("dial", err)
				return
			}
			defer conn.CloseNow()
			conn.SetReadLimit(64 << 20)
			var ready synthFrame
			if err := readJSON(ctx, conn, &ready); err != nil || ready.Type != "ready" {
				errs.add("ready", fmt.Errorf("%v %q", err, ready.Type))
				return
			}
			for i := w; ; i += *n {
				mu.Lock()
				if claimed >= *maxUtt || time.Now().After(deadline) || ctx.Err() != nil {
					mu.Unlock()
					break
				}
				claimed++
				mu.Unlock()
				text := sentences[i%len(sentences)]
				sent := time.Now()
				if err := conn.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
					errs.add("write", err)
					return
				}
				first := true
				var samples int
				for {
					typ, data, err := conn.Read(ctx)
					if err != nil {
						errs.add("read", err)
						return
					}
					if typ != websocket.MessageText {
						samples += len(data) / 2
						continue
					}
					var f synthFrame
					if err := json.Unmarshal(data, &f); err != nil {
						errs.add("frame", err)
						return
					}
					now := time.Now()
					if f.Type == "error" {
						errs.add("server "+f.Name, nil)
						break
					}
					if f.Type == "audio" && first {
						first = false
						firstClient.AddDuration(now.Sub(sent))
						if f.FirstFrameMs != nil {
							firstServer.Add(*f.FirstFrameMs)
						}
					}
					if f.Type == "utteranceComplete" {
						took := now.Sub(sent)
						complete.AddDuration(took)
						secs := float64(samples) / rate24k
						if took > 0 {
							rtfS.Add(secs / took.Seconds())
						}
						mu.Lock()
						audioS += secs
						utterances++
						mu.Unlock()
						break
					}
				}
			}
			conn.Close(websocket.StatusNormalClosure, "")
		})
	}
	wg.Wait()
	wall := time.Since(start)
	r := newReport("synthesize", map[string]any{"n": *n, "duration": dur.String(), "url": c.base.String()})
	r.WallS = wall.Seconds()
	if err := r.add(firstServer, firstClient, complete, rtfS); err != nil {
		return err
	}
	r.Values["utterances completed"] = float64(utterances)
	r.Values["audio seconds spoken"] = audioS
	r.Values["real-time factor (all sockets: audio s / wall s)"] = audioS / wall.Seconds()
	errs.into(r)
	return r.write(&c)
}
