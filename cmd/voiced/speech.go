package main

import (
	"context"
	"flag"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/speechcore"
)

// The meter is durable for the raw doors: they hold it and sync per chunk (speechcore/usage.go).
var _ speechcore.DurableUsage = (*meter.Meter)(nil)

// speechConfig is the speech service's flags: the asset mount, the ONNX Runtime environment, the
// engines and the raw speech doors. It starts (loads and warms every model) before the listener
// binds.
type speechConfig struct {
	cfg speechcore.Config
	svc *speechcore.Service
}

func (c *speechConfig) flags(fs *flag.FlagSet) {
	cfg := &c.cfg
	fs.StringVar(&cfg.AssetsDir, "speech-assets", "", "the speech-asset mount (MODELS.sha256 + models/); no default: unset serves everything else and speech routes answer 503")
	fs.StringVar(&cfg.Runtime.LibPath, "ort-lib", defaultORTLib, "the ONNX Runtime shared library (make setup places the CPU build; name a GPU build for --device cuda)")
	fs.StringVar(&cfg.Runtime.Device, "device", "cpu", "where the models run: cpu or cuda (no silent fallback)")
	fs.IntVar(&cfg.Runtime.CUDADeviceID, "cuda-device", 0, "the GPU index with --device cuda")
	fs.IntVar(&cfg.Runtime.IntraOpThreads, "intra-op-threads", 0, "ONNX Runtime intra-op threads per session (0: its default)")
	fs.IntVar(&cfg.Runtime.InterOpThreads, "inter-op-threads", 0, "ONNX Runtime inter-op threads per session (0: its default)")
	fs.IntVar(&cfg.MaxSessions, "max-speech-sessions", speechcore.DefaultMaxSessions, "concurrent raw speech sessions; beyond it 429 + Retry-After at the handshake")
	fs.DurationVar(&cfg.SocketIdle, "speech-idle-timeout", speechcore.DefaultSocketIdle, "close a raw speech socket (/v1/transcribe, /v1/synthesize, /v1/speak/stream) silent this long with nothing in flight: idle_timeout, 1008")
}

func (c *speechConfig) validate(app *App) error {
	c.cfg.Log = app.Log
	c.cfg.Sockets = app.Sockets
	c.cfg.Origins = app.Origins // one policy for every socket door (serve parsed --allow-origin)
	var err error
	c.svc, err = speechcore.New(c.cfg)
	return err
}

// start loads and warms the models and serves the raw speech doors; peers (nil on a single node)
// serve other nodes' transcripts, m (nil: unmetered) meters the raw doors under the service
// principal.
func (c *speechConfig) start(ctx context.Context, app *App, peers speechcore.Peers, m *meter.Meter) (*speechcore.Service, error) {
	svc := c.svc
	if peers != nil {
		svc.SetPeers(peers)
	}
	if m != nil {
		svc.SetUsage(m)
	}
	if err := svc.Start(ctx); err != nil {
		svc.Close()
		return nil, err
	}
	app.Speech = svc
	app.Metrics.MustRegister(svc.Collectors()...)
	svc.Register(app)
	app.OnShutdown(func(context.Context) error { return svc.Close() })
	return svc, nil
}
