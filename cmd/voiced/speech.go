package main

import (
	"context"
	"flag"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechdoor"
)

// The meter is durable for the raw doors: they hold it and sync per chunk (speechdoor/usage.go).
var _ speechdoor.DurableUsage = (*meter.Meter)(nil)

// The speech component: the asset mount, the ONNX Runtime environment and the engines
// (speechcore), and the raw speech doors that serve them (speechdoor). It starts (loads and warms
// every model) before the listener binds.
func init() {
	register("speech", orderSpeech, func() *component {
		var cfg speechcore.Config
		var doorCfg speechdoor.Config
		var svc *speechcore.Service
		var doors *speechdoor.Doors
		return &component{
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&cfg.AssetsDir, "speech-assets", "", "the speech-asset mount (MODELS.sha256 + models/); no default: unset serves everything else and speech routes answer 503")
				fs.StringVar(&cfg.Runtime.LibPath, "ort-lib", defaultORTLib, "the ONNX Runtime shared library (make setup places the CPU build; name a GPU build for --device cuda)")
				fs.StringVar(&cfg.Runtime.Device, "device", "cpu", "where the models run: cpu or cuda (no silent fallback)")
				fs.IntVar(&cfg.Runtime.CUDADeviceID, "cuda-device", 0, "the GPU index with --device cuda")
				fs.IntVar(&cfg.Runtime.IntraOpThreads, "intra-op-threads", 0, "ONNX Runtime intra-op threads per session (0: its default)")
				fs.IntVar(&cfg.Runtime.InterOpThreads, "inter-op-threads", 0, "ONNX Runtime inter-op threads per session (0: its default)")
				fs.IntVar(&doorCfg.MaxSessions, "max-speech-sessions", speechdoor.DefaultMaxSessions, "concurrent raw speech sessions; beyond it 429 + Retry-After at the handshake")
				fs.DurationVar(&doorCfg.SocketIdle, "speech-idle-timeout", speechdoor.DefaultSocketIdle, "close a raw speech socket (/v1/transcribe, /v1/synthesize, /v1/speak/stream) silent this long with nothing in flight: idle_timeout, 1008")
			},
			validate: func(app *App) error {
				cfg.Log = app.Log
				doorCfg.Log = app.Log
				doorCfg.Sockets = app.Sockets
				doorCfg.Origins = app.Origins // one policy for every socket door (serve parsed --allow-origin)
				var err error
				if svc, err = speechcore.New(cfg); err != nil {
					return err
				}
				doors, err = speechdoor.New(svc, doorCfg)
				return err
			},
			start: func(ctx context.Context, app *App) error {
				if app.Peers != nil { // the cluster starts first (orderStores)
					doors.SetPeers(app.Peers)
				}
				if app.Meter != nil { // the meter starts first (orderStores); the raw doors meter under the service principal
					doors.SetUsage(app.Meter)
				}
				if err := svc.Start(ctx); err != nil {
					svc.Close()
					return err
				}
				app.Speech = svc
				app.Metrics.MustRegister(svc.Collectors()...)
				app.Metrics.MustRegister(doors.Collectors()...)
				doors.Register(app)
				return nil
			},
			stop: func(ctx context.Context) error {
				doors.Close() // the transcripts end before the engines they decode on
				return svc.Close()
			},
		}
	})
}
