package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/whisper"
	"github.com/voiced/voiced/speechdoor"
)

// The meter is durable for the raw doors: they hold it and sync per chunk (speechdoor/usage.go).
var _ speechdoor.DurableUsage = (*meter.Meter)(nil)

// speechConfig is the speech service's flags: the asset mount, the ONNX Runtime environment and the
// engines (speechcore), and the raw speech doors that serve them (speechdoor). It starts (loads and
// warms every model) before the listener binds.
type speechConfig struct {
	cfg     speechcore.Config
	doorCfg speechdoor.Config
	svc     *speechcore.Service
	doors   *speechdoor.Doors
}

func (c *speechConfig) flags(fs *flag.FlagSet) {
	cfg := &c.cfg
	fs.StringVar(&cfg.AssetsDir, "speech-assets", "", "the speech-asset mount (MODELS.sha256 + models/); no default: unset serves everything else and speech routes answer 503")
	fs.StringVar(&cfg.Runtime.LibPath, "ort-lib", defaultORTLib, "the ONNX Runtime shared library (make setup places the CPU build; name a GPU build for --device cuda)")
	fs.StringVar(&cfg.Runtime.Device, "device", "cpu", "where the models run: cpu or cuda (no silent fallback)")
	fs.IntVar(&cfg.Runtime.CUDADeviceID, "cuda-device", 0, "the GPU index with --device cuda")
	fs.IntVar(&cfg.Runtime.IntraOpThreads, "intra-op-threads", 0, "ONNX Runtime intra-op threads per session (0: its default)")
	fs.IntVar(&cfg.Runtime.InterOpThreads, "inter-op-threads", 0, "ONNX Runtime inter-op threads per session (0: its default)")
	fs.IntVar(&cfg.WhisperDecoders, "whisper-decoders", 1, "Whisper transcriptions decoded at once, each on its own copy of the model's sessions (memory: the model once per decoder); finals first, then partials, on one queue")
	fs.StringVar(&cfg.Language, "language", "en", "the language Whisper hears when a request or session names none: an ISO-639-1 code the mounted model has, or auto (detect each final's language: one extra decoder pass)")
	fs.IntVar(&c.doorCfg.MaxSessions, "max-speech-sessions", speechdoor.DefaultMaxSessions, "concurrent raw speech sessions; beyond it 429 + Retry-After at the handshake")
	fs.DurationVar(&c.doorCfg.SocketIdle, "speech-idle-timeout", speechdoor.DefaultSocketIdle, "close a raw speech socket (/v1/transcribe, /v1/synthesize, /v1/speak/stream) silent this long with nothing in flight: idle_timeout, 1008")
}

func (c *speechConfig) validate(app *App) error {
	c.cfg.Log = app.Log
	c.doorCfg.Log = app.Log
	c.doorCfg.Sockets = app.Sockets
	c.doorCfg.Origins = app.Origins // one policy for every socket door (serve parsed --allow-origin)
	var err error
	if c.cfg.Language, err = whisper.ParseLanguage(c.cfg.Language); err != nil {
		return fmt.Errorf("--language: %w", err)
	}
	if c.svc, err = speechcore.New(c.cfg); err != nil {
		return err
	}
	c.doors, err = speechdoor.New(c.svc, c.doorCfg)
	return err
}

// start loads and warms the models and serves the raw speech doors; peers (nil on a single node)
// serve other nodes' transcripts, m (nil: unmetered) meters the raw doors under the speaker whom
// sp finds (speakers.go: the credential's principal, or the one the service token names).
func (c *speechConfig) start(ctx context.Context, app *App, peers door.Peers, m *meter.Meter, sp *speakers) (*speechcore.Service, error) {
	svc, doors := c.svc, c.doors
	if peers != nil {
		doors.SetPeers(peers)
	}
	if m != nil {
		doors.SetUsage(m)
	}
	if err := svc.Start(ctx); err != nil {
		svc.Close()
		return nil, err
	}
	app.Speech = svc
	app.Metrics.MustRegister(svc.Collectors()...)
	app.Metrics.MustRegister(doors.Collectors()...)
	doors.Register(speakerRouter{app: app, sp: sp}) // speakers.go: the doors bill the speaker
	app.OnShutdown(func(context.Context) error {
		doors.Close() // the transcripts end before the engines they decode on
		return svc.Close()
	})
	return svc, nil
}
