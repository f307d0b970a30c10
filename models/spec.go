package models

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Block is one convolution block of a GMCN: F_o output channels, the kernel
// radius, and N_p, the component count after reduction (−1: no reduction, as
// in the last block).
type Block struct {
	Channels  int
	Gaussians int
	Radius    float64
}

// Layout is a GMCN written as the paper writes it, e.g.
// "1/64 → 8/32 → 16/16 → 32/8 → 64/4 → 10": the input's channels and
// Gaussians, then one "F_o/N_p" per block and the class count last (the last
// block has no reduction).
type Layout struct {
	InputChannels, InputGaussians int
	Blocks                        []Block
}

// ParseLayout reads a layer string; "→" and "->" both separate entries.
// Every block gets the radius 2.5 of the reference; set Block.Radius to
// change it.
func ParseLayout(s string) (Layout, error) {
	parts := strings.Split(strings.ReplaceAll(s, "→", "->"), "->")
	if len(parts) < 2 {
		return Layout{}, errors.Errorf("layer string %q: need an input \"C/N\" and at least one block, separated by \"->\"", s)
	}
	var l Layout
	for i, p := range parts {
		p = strings.TrimSpace(p)
		f, n, hasN := strings.Cut(p, "/")
		fo, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || fo < 1 {
			return Layout{}, errors.Errorf("layer string %q: entry %d %q: channel count must be a positive integer", s, i+1, p)
		}
		np := -1
		if hasN {
			if np, err = strconv.Atoi(strings.TrimSpace(n)); err != nil || np < 1 {
				return Layout{}, errors.Errorf("layer string %q: entry %d %q: Gaussian count must be a positive integer", s, i+1, p)
			}
		}
		last := i == len(parts)-1
		switch {
		case i == 0 && !hasN:
			return Layout{}, errors.Errorf("layer string %q: the input entry %q must be \"channels/Gaussians\"", s, p)
		case i == 0:
			l.InputChannels, l.InputGaussians = fo, np
		case last && hasN:
			return Layout{}, errors.Errorf("layer string %q: the last entry %q is the class count and has no reduction", s, p)
		case !last && !hasN:
			return Layout{}, errors.Errorf("layer string %q: entry %d %q needs \"channels/Gaussians\"", s, i+1, p)
		default:
			l.Blocks = append(l.Blocks, Block{Channels: fo, Gaussians: np, Radius: 2.5})
		}
	}
	return l, nil
}

// Classes returns the channel count of the last block.
func (l Layout) Classes() int { return l.Blocks[len(l.Blocks)-1].Channels }

// String writes the layout in the paper's notation.
func (l Layout) String() string {
	s := []string{fmt.Sprintf("%d/%d", l.InputChannels, l.InputGaussians)}
	for _, b := range l.Blocks {
		if b.Gaussians < 0 {
			s = append(s, strconv.Itoa(b.Channels))
		} else {
			s = append(s, fmt.Sprintf("%d/%d", b.Channels, b.Gaussians))
		}
	}
	return strings.Join(s, " → ")
}

// KernelParams returns the learnable kernel parameter count for kernels of
// nk Gaussians in dimension d: every kernel Gaussian has a weight, d position
// and d·d covariance-factor parameters.
func (l Layout) KernelParams(nk, d int) int {
	fi, n := l.InputChannels, 0
	for _, b := range l.Blocks {
		n += b.Channels * fi * nk * (1 + d + d*d)
		fi = b.Channels
	}
	return n
}
