package main

import (
	"context"
	"flag"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/speechcore"
)

// The meter is durable for the raw doors: they hold it and sync per chunk (speechcore/usage.go).
var _ speechcore.DurableUsage = (*meter.Meter)(nil)

// The speech component: the asset mount, the ONNX Runtime environment, the engines and the raw
// speech doors. It starts (loads and warms every model) before the listener binds.
func init() {
	register("speech", orderSpeech, func() *component {
		var cfg speechcore.Config
		var svc *speechcore.Service
		return &component{
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&cfg.AssetsDir, "speech-assets", "", "the speech-asset mount (MODELS.sha256 + models/); no default: unset serves everything else and speech routes answer 503")
				fs.StringVar(&cfg.Runtime.LibPath, "ort-lib", defaultORTLib, "the ONNX Runtime shared library (make setup places the CPU build; name a GPU build for --device cuda)")
				fs.StringVar(&cfg.Runtime.Device, "device", "cpu", "where the models run: cpu or cuda (no silent fallback)")
				fs.IntVar(&cfg.Runtime.CUDADeviceID, "cuda-device", 0, "the GPU index with --device cuda")
				fs.IntVar(&cfg.Runtime.IntraOpThreads, "intra-op-threads", 0, "ONNX Runtime intra-op threads per session (0: its default)")
				fs.IntVar(&cfg.Runtime.InterOpThreads, "inter-op-threads", 0, "ONNX Runtime inter-op threads per session (0: its default)")
				fs.IntVar(&cfg.MaxSessions, "max-speech-sessions", speechcore.DefaultMaxSessions, "concurrent raw speech sessions; beyond it 429 + Retry-After at the handshake")
				fs.DurationVar(&cfg.SocketIdle, "speech-idle-timeout", speechcore.DefaultSocketIdle, "close a raw speech socket (/v1/transcribe, /v1/synthesize, /v1/speak/stream) silent this long with nothing in flight: idle_timeout, 1008")
			},
			validate: func(app *App) error {
				cfg.Log = app.Log
				cfg.Sockets = app.Sockets
				cfg.Origins = app.Origins // one policy for every socket door (serve parsed --allow-origin)
				var err error
				svc, err = speechcore.New(cfg)
				return err
			},
			start: func(ctx context.Context, app *App) error {
				if app.Peers != nil { // the cluster starts first (orderStores)
					svc.SetPeers(app.Peers)
				}
				if app.Meter != nil { // the meter starts first (orderStores); the raw doors meter under the service principal
					svc.SetUsage(app.Meter)
				}
				if err := svc.Start(ctx); err != nil {
					svc.Close()
					return err
				}
				app.Speech = svc
				app.Metrics.MustRegister(svc.Collectors()...)
				svc.Register(app)
				return nil
			},
			stop: func(ctx context.Context) error { return svc.Close() },
		}
	})
}
