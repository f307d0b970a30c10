package train

import (
	"time"

	"github.com/gmcn-go/gmcn/dist"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Data-parallel training (docs/distributed.md). Step g of an epoch trains
// on the global batch models.BatchIndices(perm, g, shards·B), cut into shards of
// the model's batch size B; rank r computes shards r·K … r·K+K−1 (K =
// Options.Accumulate). Every shard starts from the same running statistics;
// the gradients, running statistics, losses and counts of all shards are
// summed over the ranks in one all-reduce, and the gradient and statistics
// divided by the number of shards, so every rank takes the same Adam step.
// With one shard the loop is the single-process loop, bit for bit.

// stepSums are a training step's sums over its shards.
type stepSums struct {
	loss          float64
	correct, real int
}

// shardSums runs the forward and backward passes of this rank's shards of
// step g and leaves the gradient averaged over all shards in the learnables'
// gradients and the averaged running statistics in the model.
func (t *trainer) shardSums(g int) (stepSums, error) {
	B, n, K := t.cfg.Batch, t.train.Len(), t.opt.Accumulate
	if t.shards == 1 {
		real := min(B, n-g*B)
		loss, correct, err := t.forwardBackward(models.BatchIndices(t.st.EpochPerm, g, B), real)
		return stepSums{loss, correct, real}, err
	}
	global := models.BatchIndices(t.st.EpochPerm, g, t.shards*B)
	stats := t.m.RunningStats()
	np := paramCount(t.learn)
	sums := np + len(stats) // then loss, correct, real, and one failure flag per rank
	if len(t.acc) == 0 {
		t.acc = make([]float64, sums+3+t.comm.Size())
	}
	acc := t.acc
	clear(acc)
	var failed error
	for k := range K {
		s := t.comm.Rank()*K + k
		real := max(0, min(B, n-g*t.shards*B-s*B))
		if k > 0 {
			if err := t.m.SetRunningStats(stats); err != nil {
				failed = err
				break
			}
		}
		loss, correct, err := t.forwardBackward(global[s*B:(s+1)*B], real)
		if err == nil {
			err = addGrads(t.learn, acc[:np])
		}
		if err != nil {
			failed = errors.Wrapf(err, "shard %d of %d", s+1, t.shards)
			break
		}
		for i, v := range t.m.RunningStats() {
			acc[np+i] += v
		}
		acc[sums] += loss
		acc[sums+1] += float64(correct)
		acc[sums+2] += float64(real)
	}
	if failed != nil {
		acc[sums+3+t.comm.Rank()] = 1
	}
	start := time.Now()
	if err := t.comm.AllReduceFloat64(acc); err != nil {
		return stepSums{}, errors.Wrap(err, "summing the step over the ranks")
	}
	t.reduceTime += time.Since(start)
	if failed != nil {
		return stepSums{}, failed
	}
	for r, f := range acc[sums+3:] {
		if f != 0 {
			return stepSums{}, errors.Errorf("rank %d failed in this step (its own output has the error)", r)
		}
	}
	for i := range acc[:sums] {
		acc[i] /= float64(t.shards)
	}
	if err := setGrads(t.learn, acc[:np]); err != nil {
		return stepSums{}, err
	}
	if err := t.m.SetRunningStats(acc[np:sums]); err != nil {
		return stepSums{}, err
	}
	return stepSums{acc[sums], int(acc[sums+1]), int(acc[sums+2])}, nil
}

// anyRank reports on every rank whether flag is set on any.
func (t *trainer) anyRank(flag bool) (bool, error) {
	if t.comm.Size() == 1 {
		return flag, nil
	}
	buf := []float64{0}
	if flag {
		buf[0] = 1
	}
	if err := t.comm.AllReduceFloat64(buf); err != nil {
		return false, errors.Wrap(err, "agreeing on stopping")
	}
	return buf[0] > 0, nil
}

// startFromRoot starts every rank from rank 0's state: the checkpoint of
// Options.Resume or, for a new run, the model rank 0 built. Rank 0 sends the
// encoded checkpoint, so the other ranks need not see its file, and every
// rank checks that rank 0's configuration key is its own.
func (t *trainer) startFromRoot(key string) error {
	root := t.comm.Rank() == 0
	var data []byte
	var rootErr error
	if root {
		data, rootErr = t.rootState(key)
		if rootErr != nil {
			data = nil // an empty message tells the others
		}
	}
	data, err := dist.BroadcastBytes(t.comm, data, 0)
	if err != nil {
		return errors.Wrap(err, "sending rank 0's state")
	}
	if rootErr != nil {
		return rootErr
	}
	if len(data) == 0 {
		return errors.New("rank 0 could not start the run (its output has the error)")
	}
	st, err := checkpoint.Decode(data)
	if err != nil {
		return errors.Wrap(err, "rank 0's state")
	}
	if st.ConfigKey != key {
		return errors.Errorf("rank %d trains another configuration than rank 0 (every rank needs the same settings and data):\n  rank 0: %s\n  rank %d: %s",
			t.comm.Rank(), st.ConfigKey, t.comm.Rank(), key)
	}
	path := t.opt.Resume
	if path == "" {
		path = "rank 0's new model"
	}
	return t.resume(st, path, key)
}

// rootState returns the encoded state every rank starts from.
func (t *trainer) rootState(key string) ([]byte, error) {
	var st *checkpoint.State
	if t.opt.Resume != "" {
		var err error
		if st, err = checkpoint.Load(t.opt.Resume); err != nil {
			return nil, err
		}
		if err := t.checkKey(st, t.opt.Resume, key); err != nil {
			return nil, err
		}
	} else {
		t.st = t.fresh(key)
		rng, err := t.pcg.MarshalBinary()
		if err != nil {
			return nil, err
		}
		st = t.stateAt(0, -1)()
		st.RNG = rng
	}
	return checkpoint.Encode(st)
}

// syncModel copies rank 0's parameters and running statistics to every
// rank. The ranks compute them identically; the copy at every epoch's end
// bounds any drift a reduction that rounds differently on some rank would
// cause.
func (t *trainer) syncModel() error {
	if t.comm.Size() == 1 {
		return nil
	}
	ms := t.m.State()
	var v []float64
	for _, p := range ms.Params {
		v = append(v, p...)
	}
	np := len(v)
	v = append(v, t.m.RunningStats()...)
	if err := dist.BroadcastFloat64(t.comm, v, 0); err != nil {
		return errors.Wrap(err, "sending rank 0's model")
	}
	off := 0
	for _, p := range ms.Params {
		off += copy(p, v[off:])
	}
	if err := t.m.SetState(ms); err != nil {
		return err
	}
	return t.m.SetRunningStats(v[np:])
}

func paramCount(learn G.Nodes) int {
	n := 0
	for _, l := range learn {
		n += l.Shape().TotalSize()
	}
	return n
}

// gradOf returns the gradient tensor of the learnable n.
func gradOf(n *G.Node) (*tensor.Dense, error) {
	g, err := n.Grad()
	if err != nil {
		return nil, errors.Wrapf(err, "gradient of %s", n.Name())
	}
	d, ok := g.(*tensor.Dense)
	if !ok {
		return nil, errors.Errorf("gradient of %s is a %T", n.Name(), g)
	}
	return d, nil
}

// forGrads calls f with every learnable's gradient and the offset of its
// values in the learnables' flattened order, and returns their total count.
func forGrads(learn G.Nodes, f func(g *tensor.Dense, off int) error) (int, error) {
	off := 0
	for _, n := range learn {
		g, err := gradOf(n)
		if err != nil {
			return 0, err
		}
		if err := f(g, off); err != nil {
			return 0, errors.Wrapf(err, "gradient of %s", n.Name())
		}
		off += g.Shape().TotalSize()
	}
	return off, nil
}

// addGrads adds the learnables' gradients, flattened in order, to acc and
// zeroes them (Gorgonia accumulates into them).
func addGrads(learn G.Nodes, acc []float64) error {
	_, err := forGrads(learn, func(g *tensor.Dense, off int) error {
		switch d := g.Data().(type) {
		case []float32:
			for i, v := range d {
				acc[off+i] += float64(v)
				d[i] = 0
			}
		case []float64:
			for i, v := range d {
				acc[off+i] += v
				d[i] = 0
			}
		default:
			return errors.Errorf("dtype %v", g.Dtype())
		}
		return nil
	})
	return err
}

// setGrads sets the learnables' gradients to v, flattened in order.
func setGrads(learn G.Nodes, v []float64) error {
	n, err := forGrads(learn, func(g *tensor.Dense, off int) error {
		models.SetFloat64s(g, v[off:])
		return nil
	})
	if err == nil && n != len(v) {
		err = errors.Errorf("train: %d gradient values for %d parameters", len(v), n)
	}
	return err
}
