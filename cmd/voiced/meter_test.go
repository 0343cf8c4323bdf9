package main

import (
	"testing"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/speechcore"
)

// speechcore cannot import meter, so it names the raw doors' principal and doors itself: they
// must be the meter's, or /v1/usage would split one door in two.
func TestSpeechUsageNamesAreTheMeters(t *testing.T) {
	for name, pair := range map[string][2]string{
		"principal":  {speechcore.UsagePrincipal, meter.ServicePrincipal},
		"transcribe": {speechcore.UsageDoorTranscribe, meter.DoorTranscribe},
		"synthesize": {speechcore.UsageDoorSynthesize, meter.DoorSynthesize},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: speechcore %q, meter %q", name, pair[0], pair[1])
		}
	}
	var _ speechcore.UsageRecorder = (*meter.Meter)(nil)
}
