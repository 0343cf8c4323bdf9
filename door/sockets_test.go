package door

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSocketsShutdown(t *testing.T) {
	tests := []struct {
		name          string
		leaveAfter    time.Duration // when the socket leaves after draining starts; <0: only when cancelled
		grace         time.Duration
		wantCancelled int
		wantStuck     int
	}{
		{"drains within the grace period", 2 * time.Second, 10 * time.Second, 0, 0},
		{"cancelled at the end of the grace period", -1, 10 * time.Second, 1, 0},
		{"ignores cancellation: reported stuck", 1 * time.Hour, 10 * time.Second, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewSockets()
				ctx, leave, err := s.Enter(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					defer leave()
					<-s.Draining()
					if tc.leaveAfter < 0 {
						<-ctx.Done()
						return
					}
					time.Sleep(tc.leaveAfter)
				}()
				grace, cancel := context.WithTimeout(context.Background(), tc.grace)
				defer cancel()
				start := time.Now()
				cancelled, stuck := s.Shutdown(grace, 5*time.Second)
				if cancelled != tc.wantCancelled || stuck != tc.wantStuck {
					t.Errorf("Shutdown = (%d cancelled, %d stuck), want (%d, %d)", cancelled, stuck, tc.wantCancelled, tc.wantStuck)
				}
				if tc.leaveAfter >= 0 && tc.leaveAfter < tc.grace && time.Since(start) != tc.leaveAfter {
					t.Errorf("Shutdown returned after %v, want when the socket left (%v)", time.Since(start), tc.leaveAfter)
				}
				if _, _, err := s.Enter(context.Background()); !errors.Is(err, ErrShuttingDown) {
					t.Errorf("Enter after shutdown: %v, want ErrShuttingDown", err)
				}
				synctest.Wait()
				time.Sleep(2 * time.Hour) // let the stuck socket leave so the bubble ends clean
			})
		})
	}
}

func TestSocketsLeaveOnce(t *testing.T) {
	s := NewSockets()
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, leave, err := s.Enter(parent)
	if err != nil {
		t.Fatal(err)
	}
	if s.Open() != 1 {
		t.Fatalf("Open %d, want 1", s.Open())
	}
	cancelParent()
	<-ctx.Done() // the parent's cancellation reaches the socket's context
	leave()
	leave()
	if s.Open() != 0 {
		t.Fatalf("Open %d after leave, want 0", s.Open())
	}
	cancelled, stuck := s.Shutdown(context.Background(), time.Second)
	if cancelled != 0 || stuck != 0 {
		t.Fatalf("Shutdown with nothing open = (%d, %d)", cancelled, stuck)
	}
}
