package train

import (
	"path/filepath"
	"time"

	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// CheckpointEvery returns a Step hook that writes the checkpoint resuming
// the run after the current step to dir/runspec.CheckpointFile, atomically, once at
// least every has passed since the run started in this process or since the
// hook last wrote it, so a long epoch killed without Ctrl-C loses at most
// about every of training. It complements DefaultHooks, which writes the
// same file at epoch ends and on interruption; put it after them so the
// step log is written before each checkpoint. With every ≤ 0 it never
// writes.
func CheckpointEvery(dir string, every time.Duration) Hook {
	return checkpointEvery(dir, every, time.Now)
}

// checkpointEvery is CheckpointEvery with the clock now, which tests move
// by hand.
func checkpointEvery(dir string, every time.Duration, now func() time.Time) Hook {
	var last time.Time
	return Hook{
		Name: "periodic checkpoint",
		Start: func(StartInfo) error {
			last = now()
			return nil
		},
		Step: func(s StepInfo) error {
			if every <= 0 {
				return nil
			}
			if t := now(); t.Sub(last) >= every {
				last = t
				return checkpoint.Save(filepath.Join(dir, runspec.CheckpointFile), s.State())
			}
			return nil
		},
	}
}
