//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
)

type vec16 = archsimd.Float32x16

func lane16(p *hemLane) vec16 { return archsimd.LoadFloat32x16(p) }

func bits16(b uint16) archsimd.Mask32x16 { return archsimd.Mask32x16FromBits(b) }

// atLeast16 is atLeast per lane: lo where x < lo, else x (NaN stays NaN).
func atLeast16(x, lo vec16) vec16 { return lo.Merge(x, x.Less(lo)) }

// det16 returns det Σ per lane, by hemDet's formula.
func det16(d int, c *[9]hemLane) vec16 {
	if d == 2 {
		return lane16(&c[0]).Mul(lane16(&c[3])).Sub(lane16(&c[1]).Mul(lane16(&c[2])))
	}
	m0, m1, m2 := lane16(&c[0]), lane16(&c[1]), lane16(&c[2])
	m3, m4, m5 := lane16(&c[3]), lane16(&c[4]), lane16(&c[5])
	m6, m7, m8 := lane16(&c[6]), lane16(&c[7]), lane16(&c[8])
	return m0.Mul(m4.Mul(m8).Sub(m5.Mul(m7))).Sub(m1.Mul(m3.Mul(m8).Sub(m5.Mul(m6)))).Add(m2.Mul(m3.Mul(m7).Sub(m4.Mul(m6))))
}

// inv16 writes Σ⁻¹ per lane into inv, by invDet's formulas.
func inv16(d int, c, inv *[9]hemLane) {
	if d == 2 {
		m0, m1, m2, m3 := lane16(&c[0]), lane16(&c[1]), lane16(&c[2]), lane16(&c[3])
		r := broadcast16(1).Div(m0.Mul(m3).Sub(m1.Mul(m2)))
		neg := broadcast16(-1)
		m3.Mul(r).Store(&inv[0])
		neg.Mul(m1).Mul(r).Store(&inv[1])
		neg.Mul(m2).Mul(r).Store(&inv[2])
		m0.Mul(r).Store(&inv[3])
		return
	}
	a, b, cc := lane16(&c[0]), lane16(&c[1]), lane16(&c[2])
	dd, e, f := lane16(&c[3]), lane16(&c[4]), lane16(&c[5])
	g, h, i := lane16(&c[6]), lane16(&c[7]), lane16(&c[8])
	c00, c01, c02 := e.Mul(i).Sub(f.Mul(h)), f.Mul(g).Sub(dd.Mul(i)), dd.Mul(h).Sub(e.Mul(g))
	r := broadcast16(1).Div(a.Mul(c00).Add(b.Mul(c01)).Add(cc.Mul(c02)))
	c00.Mul(r).Store(&inv[0])
	c01.Mul(r).Store(&inv[3])
	c02.Mul(r).Store(&inv[6])
	cc.Mul(h).Sub(b.Mul(i)).Mul(r).Store(&inv[1])
	a.Mul(i).Sub(cc.Mul(g)).Mul(r).Store(&inv[4])
	b.Mul(g).Sub(a.Mul(h)).Mul(r).Store(&inv[7])
	b.Mul(f).Sub(cc.Mul(e)).Mul(r).Store(&inv[2])
	cc.Mul(dd).Sub(a.Mul(f)).Mul(r).Store(&inv[5])
	a.Mul(e).Sub(b.Mul(dd)).Mul(r).Store(&inv[8])
}

// log16 is log32 on the first n lanes, operation for operation (no fused
// multiply-adds, so that it rounds as log32 does); lanes outside (0,
// MaxFloat32] get math.Log's value one by one.
func log16(x vec16, n int) vec16 {
	b := x.AsInt32x16()
	sub := b.Less(archsimd.BroadcastInt32x16(1 << expMantLen))
	b = x.Mul(broadcast16(1<<expMantLen)).Merge(x, sub).AsInt32x16()
	e := b.ShiftAllRight(expMantLen).Sub(archsimd.BroadcastInt32x16(expBias))
	e = e.Sub(archsimd.BroadcastInt32x16(expMantLen)).Merge(e, sub)
	f := b.And(archsimd.BroadcastInt32x16(1<<expMantLen - 1)).Or(archsimd.BroadcastInt32x16(expBias << expMantLen)).AsFloat32x16()
	big := f.GreaterEqual(broadcast16(math.Sqrt2))
	f = f.Mul(broadcast16(0.5)).Merge(f, big)
	e = e.Add(archsimd.BroadcastInt32x16(1)).Merge(e, big)
	z := f.Sub(broadcast16(1))
	zz := z.Mul(z)
	z4 := zz.Mul(zz)
	p01 := broadcast16(logP0).Mul(z).Add(broadcast16(logP1))
	p23 := broadcast16(logP2).Mul(z).Add(broadcast16(logP3))
	p45 := broadcast16(logP4).Mul(z).Add(broadcast16(logP5))
	p67 := broadcast16(logP6).Mul(z).Add(broadcast16(logP7))
	p := p01.Mul(zz).Add(p23).Mul(z4).Add(p45.Mul(zz).Add(p67)).Mul(z).Add(broadcast16(logP8))
	fe := e.ConvertToFloat32()
	y := p.Mul(z).Mul(zz).Add(fe.Mul(broadcast16(log2Lo))).Sub(broadcast16(0.5).Mul(zz))
	r := z.Add(y).Add(fe.Mul(broadcast16(log2Hi)))
	valid := x.Greater(vec16{}).And(x.LessEqual(broadcast16(math.MaxFloat32))).ToBits()
	if want := uint16(1<<n - 1); valid&want != want {
		var xs, rs hemLane
		x.Store(&xs)
		r.Store(&rs)
		for j := range n {
			if valid>>j&1 == 0 {
				rs[j] = log32(xs[j])
			}
		}
		r = lane16(&rs)
	}
	return r
}

// hemExp16 is hemExp on sixteen lanes: NaN stays NaN, and arguments above
// expMaxArg give +Inf.
func hemExp16(c *expVec16, x vec16) vec16 {
	y := broadcast16(float32(math.Inf(1))).Merge(c.exp(x), x.Greater(broadcast16(expMaxArg)))
	return x.Merge(y, x.IsNaN())
}

// fit is emFit.fit on every lane: ŵ, ln det Σ of the targets, prepare, the
// KL mask when record (decide after initial), and the E and M steps
// (forward). The targets, initial components and, unless record, the masks
// must be staged.
func (e *hemLanes) fit(record bool) {
	d, m, k, n := e.d, e.m, e.k, e.n
	eps := broadcast16(hemEpsSmall)
	if record {
		e.initial()
	} else {
		e.unpackMasks()
	}
	e.selectInit()
	var sumw vec16
	for i := range m {
		sumw = sumw.Add(lane16(&e.w[i]))
	}
	bigW := atLeast16(sumw, eps)
	sumw.Store(&e.sumw)
	bigW.Store(&e.bigW)
	for i := range m {
		lane16(&e.w[i]).Div(bigW).Store(&e.what[i])
		if record {
			log16(det16(d, &e.cov[i]), n).Store(&e.logDet[i])
		}
	}
	var sumv vec16
	cst := broadcast16(float32(d) * float32(hemLog2Pi))
	for s := range k {
		sumv = sumv.Add(lane16(&e.yw[s]))
		ylog := log16(det16(d, &e.ycov[s]), n)
		ylog.Store(&e.ylog[s])
		inv16(d, &e.ycov[s], &e.inv[s])
		broadcast16(-0.5).Mul(cst.Add(ylog)).Store(&e.logNorm[s])
	}
	bigV := atLeast16(sumv, eps)
	sumv.Store(&e.sumv)
	bigV.Store(&e.bigV)
	for s := range k {
		lane16(&e.yw[s]).Div(bigV).Store(&e.vhat[s])
	}
	e.pairs(record)
	if record {
		e.packMasks()
	}
	e.forward()
}

// initial is emFit.initial on every lane, over lane j's mj[j] targets (the
// padding takes no part): Kruskal's merges of the closest pair of
// different clusters, pairs in (i, j) order breaking ties, mj[j] − k times;
// then per cluster, in ascending name order, its member of largest |w|.
func (e *hemLanes) initial() {
	d, m, k := e.d, e.m, e.k
	mj := archsimd.LoadInt32x16(&e.mj)
	inf := broadcast16(float32(math.Inf(1)))
	absMask := archsimd.BroadcastInt32x16(math.MaxInt32)
	var zero vec16
	var valid, neg [hemMaxM]uint16
	for i := range m {
		valid[i] = mj.Greater(archsimd.BroadcastInt32x16(int32(i))).ToBits()
		neg[i] = lane16(&e.w[i]).Less(zero).ToBits()
		archsimd.BroadcastInt32x16(int32(i)).Store(&e.label[i])
	}
	p := 0
	for i := range m {
		for j := i + 1; j < m; j++ {
			var dist vec16
			for c := range d {
				t := lane16(&e.mu[i][c]).Sub(lane16(&e.mu[j][c]))
				dist = dist.Add(t.Mul(t))
			}
			dist.Merge(inf, bits16(^(neg[i] ^ neg[j]))).Store(&e.dist[p])
			p++
		}
	}
	for step := range m - k {
		active := mj.Greater(archsimd.BroadcastInt32x16(int32(step + k))).ToBits()
		var found uint16
		var bestD vec16
		var bestA, bestB archsimd.Int32x16
		p := 0
		for i := range m {
			li := archsimd.LoadInt32x16(&e.label[i])
			for j := i + 1; j < m; j++ {
				lj := archsimd.LoadInt32x16(&e.label[j])
				dist := lane16(&e.dist[p])
				p++
				ok := valid[i] & valid[j] & li.NotEqual(lj).ToBits()
				better := ok & (^found | dist.Less(bestD).ToBits())
				b := bits16(better)
				bestD, bestA, bestB = dist.Merge(bestD, b), li.Merge(bestA, b), lj.Merge(bestB, b)
				found |= better
			}
		}
		keep, drop, apply := bestA.Min(bestB), bestA.Max(bestB), active&found
		for i := range m {
			li := archsimd.LoadInt32x16(&e.label[i])
			keep.Merge(li, bits16(li.Equal(drop).ToBits()&apply)).Store(&e.label[i])
		}
	}
	var next archsimd.Int32x16 // clusters named so far
	for c := range m {
		cv := archsimd.BroadcastInt32x16(int32(c))
		root := archsimd.LoadInt32x16(&e.label[c]).Equal(cv).ToBits() & valid[c]
		if root == 0 {
			continue
		}
		best, bestW := cv, lane16(&e.w[c]).AsInt32x16().And(absMask).AsFloat32x16()
		for i := c + 1; i < m; i++ {
			wi := lane16(&e.w[i]).AsInt32x16().And(absMask).AsFloat32x16()
			take := bits16(archsimd.LoadInt32x16(&e.label[i]).Equal(cv).ToBits() & valid[i] & wi.Greater(bestW).ToBits())
			best, bestW = archsimd.BroadcastInt32x16(int32(i)).Merge(best, take), wi.Merge(bestW, take)
		}
		for s := range k {
			set := bits16(root & next.Equal(archsimd.BroadcastInt32x16(int32(s))).ToBits())
			best.Merge(archsimd.LoadInt32x16(&e.init[s]), set).Store(&e.init[s])
		}
		next = next.Add(archsimd.BroadcastInt32x16(1).Masked(bits16(root)))
	}
}

// selectInit copies every lane's start targets of the components into yw,
// ymu and ycov.
func (e *hemLanes) selectInit() {
	d, m, k := e.d, e.m, e.k
	for s := range k {
		init := archsimd.LoadInt32x16(&e.init[s])
		var w vec16
		var mu [3]vec16
		var cov [9]vec16
		for i := range m {
			eq := init.Equal(archsimd.BroadcastInt32x16(int32(i)))
			w = lane16(&e.w[i]).Merge(w, eq)
			for c := range d {
				mu[c] = lane16(&e.mu[i][c]).Merge(mu[c], eq)
			}
			for c := range d * d {
				cov[c] = lane16(&e.cov[i][c]).Merge(cov[c], eq)
			}
		}
		w.Store(&e.yw[s])
		for c := range d {
			mu[c].Store(&e.ymu[s][c])
		}
		for c := range d * d {
			cov[c].Store(&e.ycov[s][c])
		}
	}
}

// unpackMasks turns the staged dmask into mask.
func (e *hemLanes) unpackMasks() {
	var zero archsimd.Int32x16
	for i := range e.m {
		dm := archsimd.LoadInt32x16(&e.dmask[i])
		for s := range e.k {
			e.mask[i*e.k+s] = dm.And(archsimd.BroadcastInt32x16(1 << s)).NotEqual(zero).ToBits()
		}
	}
}

// packMasks turns the mask that fit decided into dmask.
func (e *hemLanes) packMasks() {
	for i := range e.m {
		var dm archsimd.Int32x16
		for s := range e.k {
			dm = dm.Or(archsimd.BroadcastInt32x16(1 << s).Masked(bits16(e.mask[i*e.k+s])))
		}
		dm.Store(&e.dmask[i])
	}
}

// pairs is prepare's pair loop per lane: at_is, ln(a·b) and ln L_is; with
// record also decide's KL mask.
func (e *hemLanes) pairs(record bool) {
	d, m, k := e.d, e.m, e.k
	half, four := broadcast16(0.5), broadcast16(hemVirtualSamples)
	logEps, thr, fd := broadcast16(hemLogEpsSmall), broadcast16(hemKLThreshold), broadcast16(float32(d))
	var zero vec16
	for i := range m {
		aw := four.Mul(lane16(&e.what[i]))
		neg := lane16(&e.w[i]).Less(zero).ToBits()
		bestKL, bestS := broadcast16(float32(math.Inf(1))), archsimd.Int32x16{}
		for s := range k {
			p := i*k + s
			a, mu, cov, y := &e.inv[s], &e.mu[i], &e.cov[i], &e.ymu[s]
			var qf, tr vec16
			if d == 2 {
				t0, t1 := lane16(&mu[0]).Sub(lane16(&y[0])), lane16(&mu[1]).Sub(lane16(&y[1]))
				a0 := lane16(&a[0]).Mul(t0).Add(lane16(&a[1]).Mul(t1))
				a1 := lane16(&a[2]).Mul(t0).Add(lane16(&a[3]).Mul(t1))
				a0.Store(&e.at[p][0])
				a1.Store(&e.at[p][1])
				qf = t0.Mul(a0).Add(t1.Mul(a1))
				tr = lane16(&a[0]).Mul(lane16(&cov[0])).Add(lane16(&a[1]).Mul(lane16(&cov[2]))).
					Add(lane16(&a[2]).Mul(lane16(&cov[1]))).Add(lane16(&a[3]).Mul(lane16(&cov[3])))
			} else {
				var t [3]vec16
				for c := range 3 {
					t[c] = lane16(&mu[c]).Sub(lane16(&y[c]))
				}
				for r := range 3 {
					ar := lane16(&a[3*r]).Mul(t[0]).Add(lane16(&a[3*r+1]).Mul(t[1])).Add(lane16(&a[3*r+2]).Mul(t[2]))
					ar.Store(&e.at[p][r])
					qf = qf.Add(t[r].Mul(ar))
				}
				for r := range 3 {
					for c := range 3 {
						tr = tr.Add(lane16(&a[3*r+c]).Mul(lane16(&cov[3*c+r])))
					}
				}
			}
			logp := lane16(&e.logNorm[s]).Sub(half.Mul(qf)).Sub(half.Mul(tr))
			logp.Store(&e.logp[p])
			aw.Mul(atLeast16(logp, logEps)).Store(&e.l[p])
			if !record {
				continue
			}
			same := ^(neg ^ lane16(&e.yw[s]).Less(zero).ToBits())
			kl := half.Mul(qf.Add(tr).Sub(fd).Sub(lane16(&e.logDet[i])).Add(lane16(&e.ylog[s]))).Masked(bits16(same))
			e.mask[p] = kl.Less(thr).ToBits()
			better := kl.Less(bestKL)
			bestKL = kl.Merge(bestKL, better)
			bestS = archsimd.BroadcastInt32x16(int32(s)).Merge(bestS, better)
		}
		if record {
			for s := range k {
				e.mask[i*k+s] |= bestS.Equal(archsimd.BroadcastInt32x16(int32(s))).ToBits()
			}
		}
	}
}

// forward is emFit.forward per lane.
func (e *hemLanes) forward() {
	d, m, k := e.d, e.m, e.k
	eps := broadcast16(hemEpsSmall)
	c := newExpVec16()
	for p := range m * k {
		hemExp16(&c, lane16(&e.l[p])).Store(&e.l[p])
	}
	for s := range k {
		clear(e.pi[s][:])
	}
	for i := range m {
		var sum vec16
		for s := range k {
			p := i*k + s
			q := atLeast16(lane16(&e.vhat[s]).Mul(lane16(&e.l[p])), eps).Masked(bits16(e.mask[p]))
			q.Store(&e.q[p])
			sum = sum.Add(q)
		}
		sum.Store(&e.sumq[i])
		what := lane16(&e.what[i])
		for s := range k {
			p := i*k + s
			r := lane16(&e.q[p]).Div(sum)
			r.Store(&e.r[p])
			lane16(&e.pi[s]).Add(r.Mul(what)).Store(&e.pi[s])
		}
	}
	bigW := lane16(&e.bigW)
	for s := range k {
		pi := lane16(&e.pi[s])
		pic := atLeast16(pi, eps)
		var mu [3]vec16
		for i := range m {
			p := i*k + s
			beta := lane16(&e.r[p]).Mul(lane16(&e.what[i])).Div(pic)
			beta.Store(&e.beta[p])
			for c := range d {
				mu[c] = mu[c].Add(beta.Mul(lane16(&e.mu[i][c])))
			}
		}
		for c := range d {
			mu[c].Store(&e.cmu[s][c])
		}
		pi.Mul(bigW).Store(&e.cw[s])
		e.dead[s] = pi.Less(broadcast16(hemEpsLarge)).ToBits()
	}
}

// covariances is emFit.covariances per lane.
func (e *hemLanes) covariances() {
	d, m, k := e.d, e.m, e.k
	for s := range k {
		var cv [9]vec16
		cmu := &e.cmu[s]
		for i := range m {
			bt, mu, cov := lane16(&e.beta[i*k+s]), &e.mu[i], &e.cov[i]
			var t [3]vec16
			for c := range d {
				t[c] = lane16(&mu[c]).Sub(lane16(&cmu[c]))
			}
			for r := range d {
				for c := range d {
					cv[r*d+c] = cv[r*d+c].Add(bt.Mul(lane16(&cov[r*d+c]).Add(t[r].Mul(t[c]))))
				}
			}
		}
		dead := bits16(e.dead[s])
		one, zero := broadcast16(1), vec16{}
		for c := range d * d {
			id := zero
			if c%(d+1) == 0 {
				id = one
			}
			id.Merge(cv[c], dead).Store(&e.ccov[s][c])
		}
	}
}

// backward is emFit.backward per lane: from the staged gradients of the
// fitted components (cgw, cgmu, cgcov) to those of the targets (gw, gmu,
// gcov) and of the targets the components start from (ygw, ygmu, ygcov),
// with the same clips. fit must have run on the same targets.
func (e *hemLanes) backward() {
	d, m, k := e.d, e.m, e.k
	eps := broadcast16(hemEpsSmall)
	var zero vec16
	for i := range m {
		clear(e.gwhat[i][:])
		for c := range d {
			clear(e.gmu[i][c][:])
		}
		for c := range d * d {
			clear(e.gcov[i][c][:])
		}
	}
	bigW := lane16(&e.bigW)
	var gW vec16
	// M-step: w_s = π_s W, μ_s = Σ β μ_i, Σ_s = Σ β (Σ_i + δδᵀ), δ = μ_i − μ_s.
	for s := range k {
		gws, pi := lane16(&e.cgw[s]), lane16(&e.pi[s])
		gpi := gws.Mul(bigW)
		gW = gW.Add(gws.Mul(pi))
		dead := bits16(e.dead[s])
		var g, gmu, cmu [9]vec16
		for c := range d * d {
			g[c] = zero.Merge(lane16(&e.cgcov[s][c]), dead)
		}
		for c := range d {
			gmu[c], cmu[c] = lane16(&e.cgmu[s][c]), lane16(&e.cmu[s][c])
		}
		var gbeta [hemMaxM]vec16
		for i := range m {
			bt, mu, cov := lane16(&e.beta[i*k+s]), &e.mu[i], &e.cov[i]
			var t [3]vec16
			for c := range d {
				t[c] = lane16(&mu[c]).Sub(cmu[c])
			}
			var gb vec16
			for r := range d {
				// (G + Gᵀ) δ, the gradient of ⟨G, Σ_i + δδᵀ⟩ in δ
				var gt vec16
				for c := range d {
					gb = gb.Add(g[r*d+c].Mul(lane16(&cov[r*d+c]).Add(t[r].Mul(t[c]))))
					gt = gt.Add(g[r*d+c].Add(g[c*d+r]).Mul(t[c]))
				}
				dr := bt.Mul(gt)
				lane16(&e.gmu[i][r]).Add(dr).Store(&e.gmu[i][r])
				gmu[r] = gmu[r].Sub(dr)
			}
			gbeta[i] = gb
			for c := range d * d {
				lane16(&e.gcov[i][c]).Add(bt.Mul(g[c])).Store(&e.gcov[i][c])
			}
		}
		ipic := broadcast16(1).Div(atLeast16(pi, eps))
		var gpic vec16
		for i := range m {
			bt := lane16(&e.beta[i*k+s])
			for c := range d {
				gbeta[i] = gbeta[i].Add(gmu[c].Mul(lane16(&e.mu[i][c])))
				lane16(&e.gmu[i][c]).Add(bt.Mul(gmu[c])).Store(&e.gmu[i][c])
			}
			gpic = gpic.Sub(gbeta[i].Mul(bt).Mul(ipic))
		}
		gpi = gpi.Add(gpic.Masked(pi.Greater(eps)))
		for i := range m {
			p := i*k + s
			grho := gbeta[i].Mul(ipic).Add(gpi)
			grho.Mul(lane16(&e.what[i])).Store(&e.gq[p]) // ∂L/∂r_is for now
			lane16(&e.gwhat[i]).Add(grho.Mul(lane16(&e.r[p]))).Store(&e.gwhat[i])
		}
	}
	e.backwardE()
	// Initial components are copies of targets.
	ibigV := broadcast16(1).Div(lane16(&e.bigV))
	var gV vec16
	for s := range k {
		gV = gV.Sub(lane16(&e.gvhat[s]).Mul(lane16(&e.vhat[s])).Mul(ibigV))
	}
	gV = gV.Masked(lane16(&e.sumv).Greater(eps))
	for s := range k {
		lane16(&e.gvhat[s]).Mul(ibigV).Add(gV).Store(&e.ygw[s])
		for c := range d {
			lane16(&e.gat[s][c]).Store(&e.ygmu[s][c])
		}
		// ½(Σ_i g_is at atᵀ − (Σ_i g_is) A + A W A), W = Σ_i g_is Σ_i
		a, w := &e.inv[s], &e.gsig[s]
		var aw [9]vec16
		for r := range d {
			for c := range d {
				for t := range d {
					aw[r*d+c] = aw[r*d+c].Add(lane16(&a[r*d+t]).Mul(lane16(&w[t*d+c])))
				}
			}
		}
		gsum, half := lane16(&e.gsum[s]), broadcast16(0.5)
		for r := range d {
			for c := range d {
				var awa vec16
				for t := range d {
					awa = awa.Add(aw[r*d+t].Mul(lane16(&a[t*d+c])))
				}
				j := r*d + c
				half.Mul(lane16(&e.gaat[s][j]).Sub(gsum.Mul(lane16(&a[j]))).Add(awa)).Store(&e.ygcov[s][j])
			}
		}
	}
	ibigW := broadcast16(1).Div(bigW)
	for i := range m {
		gW = gW.Sub(lane16(&e.gwhat[i]).Mul(lane16(&e.what[i])).Mul(ibigW))
	}
	gW = gW.Masked(lane16(&e.sumw).Greater(eps))
	for i := range m {
		lane16(&e.gwhat[i]).Mul(ibigW).Add(gW).Store(&e.gw[i])
	}
	e.scatterInit()
}

// scatterInit adds the gradients of the components' start copies (ygw,
// ygmu, ygcov) to the targets they were copied from.
func (e *hemLanes) scatterInit() {
	d, m, k := e.d, e.m, e.k
	for s := range k {
		init := archsimd.LoadInt32x16(&e.init[s])
		for i := range m {
			eq := init.Equal(archsimd.BroadcastInt32x16(int32(i)))
			lane16(&e.gw[i]).Add(lane16(&e.ygw[s]).Masked(eq)).Store(&e.gw[i])
			for c := range d {
				lane16(&e.gmu[i][c]).Add(lane16(&e.ygmu[s][c]).Masked(eq)).Store(&e.gmu[i][c])
			}
			for c := range d * d {
				lane16(&e.gcov[i][c]).Add(lane16(&e.ygcov[s][c]).Masked(eq)).Store(&e.gcov[i][c])
			}
		}
	}
}

// backwardE is the E-step part of backward: through r_is = q_is / Σ_t q_it,
// q_is = max(v̂_s L_is, ε)·mask and L = max(a·b, ε)^(4ŵ_i) (see
// emFit.backward), into ∂L/∂ŵ_i, ∂L/∂μ_i, ∂L/∂Σ_i and the per-component
// sums gvhat, gsum, gat, gaat and gsig.
func (e *hemLanes) backwardE() {
	d, m, k := e.d, e.m, e.k
	eps, logEps, four := broadcast16(hemEpsSmall), broadcast16(hemLogEpsSmall), broadcast16(hemVirtualSamples)
	for s := range k {
		clear(e.gvhat[s][:])
		clear(e.gsum[s][:])
		for c := range d {
			clear(e.gat[s][c][:])
		}
		for c := range d * d {
			clear(e.gaat[s][c][:])
			clear(e.gsig[s][c][:])
		}
	}
	for i := range m {
		var dot vec16
		for s := range k {
			p := i*k + s
			dot = dot.Add(lane16(&e.gq[p]).Mul(lane16(&e.r[p])))
		}
		isumq := broadcast16(1).Div(lane16(&e.sumq[i]))
		what := lane16(&e.what[i])
		gwhat := lane16(&e.gwhat[i])
		for s := range k {
			p := i*k + s
			l, vh := lane16(&e.l[p]), lane16(&e.vhat[s])
			on := vh.Mul(l).Greater(eps).And(bits16(e.mask[p]))
			gq := lane16(&e.gq[p]).Sub(dot).Mul(isumq).Masked(on)
			lane16(&e.gvhat[s]).Add(gq.Mul(l).Masked(on)).Store(&e.gvhat[s])
			gl := gq.Mul(vh)
			logp := lane16(&e.logp[p])
			gwhat = gwhat.Add(gl.Mul(four).Mul(l).Mul(atLeast16(logp, logEps)).Masked(on))
			g := gl.Mul(four).Mul(what).Mul(l).Masked(on.And(logp.Greater(logEps)))
			lane16(&e.gsum[s]).Add(g).Store(&e.gsum[s])
			h := broadcast16(-0.5).Mul(g)
			at, a, cov := &e.at[p], &e.inv[s], &e.cov[i]
			for r := range d {
				gr := g.Mul(lane16(&at[r]))
				lane16(&e.gmu[i][r]).Sub(gr).Store(&e.gmu[i][r])
				lane16(&e.gat[s][r]).Add(gr).Store(&e.gat[s][r])
				for c := range d {
					j := r*d + c
					lane16(&e.gaat[s][j]).Add(gr.Mul(lane16(&at[c]))).Store(&e.gaat[s][j])
				}
			}
			for c := range d * d {
				lane16(&e.gsig[s][c]).Add(g.Mul(lane16(&cov[c]))).Store(&e.gsig[s][c])
				lane16(&e.gcov[i][c]).Add(h.Mul(lane16(&a[c]))).Store(&e.gcov[i][c])
			}
		}
		gwhat.Store(&e.gwhat[i])
	}
}
