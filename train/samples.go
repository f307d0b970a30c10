package train

import (
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Samples is a labelled set of packed float32 mixtures; Layout.B is the
// number of samples.
type Samples struct {
	Data    []float32
	Layout  mixture.Layout
	Labels  []int
	Classes int
}

// Len returns the number of samples.
func (s Samples) Len() int { return s.Layout.B }

func (s Samples) check(name string) error {
	if s.Len() < 1 {
		return errors.Errorf("%s set is empty", name)
	}
	if len(s.Data) != s.Layout.Len() || len(s.Labels) != s.Len() {
		return errors.Errorf("%s set: %d values and %d labels for layout %v", name, len(s.Data), len(s.Labels), s.Layout.Shape())
	}
	for i, y := range s.Labels {
		if y < 0 || y >= s.Classes {
			return errors.Errorf("%s set: sample %d has label %d outside [0, %d)", name, i, y, s.Classes)
		}
	}
	return nil
}
