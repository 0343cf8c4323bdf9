package main

import (
	"testing"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/speechdoor"
)

// speechdoor cannot import meter, so it names the raw doors' principal and doors itself: they
// must be the meter's, or /v1/usage would split one door in two.
func TestSpeechUsageNamesAreTheMeters(t *testing.T) {
	for name, pair := range map[string][2]string{
		"principal":  {speechdoor.UsagePrincipal, meter.ServicePrincipal},
		"transcribe": {speechdoor.UsageDoorTranscribe, meter.DoorTranscribe},
		"synthesize": {speechdoor.UsageDoorSynthesize, meter.DoorSynthesize},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: speechdoor %q, meter %q", name, pair[0], pair[1])
		}
	}
	var _ speechdoor.UsageRecorder = (*meter.Meter)(nil)
}
