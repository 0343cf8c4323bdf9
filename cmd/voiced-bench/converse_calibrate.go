package main

import (
	"context"
	"fmt"

	"github.com/coder/websocket"
)

// calibrate times each clip's Whisper pass through /v1/transcribe (fast, the final's decodeMs,
// best of 3) and each first sentence through /v1/synthesize (firstFrameMs, best of 3).
func (b *converseBench) calibrate(ctx context.Context, results []turnResult) (map[string]float64, map[string]float64) {
	w, k := map[string]float64{}, map[string]float64{}
	for _, t := range results {
		if _, ok := w[t.utt.name]; !ok {
			// What the conversation decodes: prefix padding, the speech, and the silence up to the stop.
			pcm := append([]float32(nil), t.utt.pcm...)
			if extra := int(t.stopAudioEndMs-t.trueEndMs) * rate16k / 1000; extra > 0 {
				pcm = append(pcm, make([]float32, extra)...)
			}
			if v, err := b.whisperOnce(ctx, pcm); err == nil {
				w[t.utt.name] = v
			} else {
				b.errors.add("calibrate transcribe", err)
			}
		}
		if _, ok := k[t.firstSentence]; !ok && t.firstSentence != "" {
			if v, err := b.kokoroOnce(ctx, t.firstSentence); err == nil {
				k[t.firstSentence] = v
			} else {
				b.errors.add("calibrate synthesize", err)
			}
		}
	}
	return w, k
}

func (b *converseBench) whisperOnce(ctx context.Context, pcm []float32) (float64, error) {
	best := -1.0
	for range 3 {
		conn, _, err := websocket.Dial(ctx, b.c.ws("/v1/transcribe"), &websocket.DialOptions{HTTPHeader: b.c.authHeader()})
		if err != nil {
			return 0, err
		}
		err = func() error {
			defer conn.CloseNow()
			if err := conn.Write(ctx, websocket.MessageBinary, pcm16Bytes(pcm)); err != nil {
				return err
			}
			if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"end"}`)); err != nil {
				return err
			}
			for {
				var d transcribeDelta
				if err := readJSON(ctx, conn, &d); err != nil {
					return err
				}
				if d.Type == "error" {
					return fmt.Errorf("%s: %s", d.Name, d.Message)
				}
				if d.Type == "delta" && d.Kind == "final" {
					if best < 0 || d.DecodeMs < best {
						best = d.DecodeMs
					}
					return nil
				}
			}
		}()
		if err != nil {
			return 0, err
		}
	}
	return best, nil
}

func (b *converseBench) kokoroOnce(ctx context.Context, text string) (float64, error) {
	conn, _, err := websocket.Dial(ctx, b.c.ws("/v1/synthesize"), &websocket.DialOptions{HTTPHeader: b.c.authHeader()})
	if err != nil {
		return 0, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	best := -1.0
	for range 3 {
		if err := conn.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
			return 0, err
		}
		for done := false; !done; {
			var f synthFrame
			if err := readJSON(ctx, conn, &f); err != nil {
				return 0, err
			}
			switch f.Type {
			case "error":
				return 0, fmt.Errorf("%s: %s", f.Name, f.Message)
			case "audio":
				if f.FirstFrameMs != nil && (best < 0 || *f.FirstFrameMs < best) {
					best = *f.FirstFrameMs
				}
			case "utteranceComplete":
				done = true
			}
		}
	}
	return best, nil
}
