package cpu

// The O(N²) loops of the dense ReLU fit, written out per dimension so every
// array is resliced to n (no bounds checks in the inner loop) and the
// quadratic form is a fixed sequence of multiply-adds. Each row of terms runs
// in three sweeps: the exponents into a scratch row, expRow over the row (one
// call, not one per term, since the float32 polynomial is too large to
// inline), then the sums. They are the scalar path for both float types;
// float32 takes the vectorised loops of relufit_simd.go instead where the CPU
// allows.

// reluForward2 computes t_k = Σ_j a_j E_kj and e_k = Σ_j x_j E_kj in 2D.
func reluForward2[T Float](s *reluWork[T]) {
	n := s.n
	m0, m1 := s.mu[0][:n], s.mu[1][:n]
	q00, q01, q11 := s.q[0][:n], s.q[1][:n], s.q[2][:n]
	an, xn, v := s.an[:n], s.xn[:n], s.row[:n]
	for k := range n {
		p0, p1 := m0[k], m1[k]
		for j := range v {
			d0, d1 := p0-m0[j], p1-m1[j]
			v[j] = d0*(q00[j]*d0+q01[j]*d1) + q11[j]*d1*d1
		}
		s.t[k], s.e[k] = reluRowSums(v, an, xn)
	}
}

// reluRowSums turns the exponents v of one centroid's row into the terms
// E_kj and returns their sums weighted by an and by xn.
func reluRowSums[T Float](v, an, xn []T) (ta, te T) {
	expRow(v)
	an, xn = an[:len(v)], xn[:len(v)]
	for j := range v {
		ta += an[j] * v[j]
		te += xn[j] * v[j]
	}
	return ta, te
}

// reluForward3 is reluForward2 in 3D.
func reluForward3[T Float](s *reluWork[T]) {
	n := s.n
	m0, m1, m2 := s.mu[0][:n], s.mu[1][:n], s.mu[2][:n]
	q00, q01, q02 := s.q[0][:n], s.q[1][:n], s.q[2][:n]
	q11, q12, q22 := s.q[3][:n], s.q[4][:n], s.q[5][:n]
	an, xn, v := s.an[:n], s.xn[:n], s.row[:n]
	for k := range n {
		p0, p1, p2 := m0[k], m1[k], m2[k]
		for j := range v {
			d0, d1, d2 := p0-m0[j], p1-m1[j], p2-m2[j]
			v[j] = d0*(q00[j]*d0+q01[j]*d1+q02[j]*d2) + d1*(q11[j]*d1+q12[j]*d2) + q22[j]*d2*d2
		}
		s.t[k], s.e[k] = reluRowSums(v, an, xn)
	}
}

// reluBackward2 accumulates the backward sums in 2D: for Gaussian j (outer
// loop, accumulators in registers) over all centroids k, with u = A_j δ and
// w = E_kj (gt_k a_j + ge_k x_j): ga_j, gx_j, u_j = Σ w u, uu_j = Σ w u uᵀ
// and, per centroid, kq_k = Σ_j w u. The row holds exp(quadratic form), so
// the normalisation enters through an, xn and scales ga, gx at the end.
func reluBackward2[T Float](s *reluWork[T]) {
	n := s.n
	m0, m1 := s.mu[0][:n], s.mu[1][:n]
	gt, ge := s.gt[:n], s.ge[:n]
	k0, k1 := s.kq[0][:n], s.kq[1][:n]
	v, v0, v1 := s.row[:n], s.rowU[0][:n], s.rowU[1][:n]
	clear(k0)
	clear(k1)
	for j := range n {
		p0, p1 := m0[j], m1[j]
		a00, a01, a11 := s.sym[0][j], s.sym[1][j], s.sym[2][j]
		anj, xnj := s.an[j], s.xn[j]
		for k := range v {
			d0, d1 := m0[k]-p0, m1[k]-p1
			u0 := a00*d0 + a01*d1
			u1 := a01*d0 + a11*d1
			v0[k], v1[k] = u0, u1
			v[k] = -(d0*u0 + d1*u1) / 2
		}
		expRow(v)
		var ga, gx, u0, u1, uu00, uu01, uu11 T
		for k := range v {
			et, ee := v[k]*gt[k], v[k]*ge[k]
			ga += et
			gx += ee
			w := et*anj + ee*xnj
			w0, w1 := w*v0[k], w*v1[k]
			u0 += w0
			u1 += w1
			uu00 += w0 * v0[k]
			uu01 += w0 * v1[k]
			uu11 += w1 * v1[k]
			k0[k] += w0
			k1[k] += w1
		}
		s.ga[j], s.gx[j] = ga*s.nrm[j], gx*s.nrm[j]
		s.u[0][j], s.u[1][j] = u0, u1
		s.uu[0][j], s.uu[1][j], s.uu[2][j] = uu00, uu01, uu11
	}
}

// reluBackward3 is reluBackward2 in 3D.
func reluBackward3[T Float](s *reluWork[T]) {
	n := s.n
	m0, m1, m2 := s.mu[0][:n], s.mu[1][:n], s.mu[2][:n]
	gt, ge := s.gt[:n], s.ge[:n]
	k0, k1, k2 := s.kq[0][:n], s.kq[1][:n], s.kq[2][:n]
	v, v0, v1, v2 := s.row[:n], s.rowU[0][:n], s.rowU[1][:n], s.rowU[2][:n]
	clear(k0)
	clear(k1)
	clear(k2)
	for j := range n {
		p0, p1, p2 := m0[j], m1[j], m2[j]
		a00, a01, a02 := s.sym[0][j], s.sym[1][j], s.sym[2][j]
		a11, a12, a22 := s.sym[3][j], s.sym[4][j], s.sym[5][j]
		anj, xnj := s.an[j], s.xn[j]
		for k := range v {
			d0, d1, d2 := m0[k]-p0, m1[k]-p1, m2[k]-p2
			u0 := a00*d0 + a01*d1 + a02*d2
			u1 := a01*d0 + a11*d1 + a12*d2
			u2 := a02*d0 + a12*d1 + a22*d2
			v0[k], v1[k], v2[k] = u0, u1, u2
			v[k] = -(d0*u0 + d1*u1 + d2*u2) / 2
		}
		expRow(v)
		var ga, gx, u0, u1, u2, uu00, uu01, uu02, uu11, uu12, uu22 T
		for k := range v {
			et, ee := v[k]*gt[k], v[k]*ge[k]
			ga += et
			gx += ee
			w := et*anj + ee*xnj
			w0, w1, w2 := w*v0[k], w*v1[k], w*v2[k]
			u0 += w0
			u1 += w1
			u2 += w2
			uu00 += w0 * v0[k]
			uu01 += w0 * v1[k]
			uu02 += w0 * v2[k]
			uu11 += w1 * v1[k]
			uu12 += w1 * v2[k]
			uu22 += w2 * v2[k]
			k0[k] += w0
			k1[k] += w1
			k2[k] += w2
		}
		s.ga[j], s.gx[j] = ga*s.nrm[j], gx*s.nrm[j]
		s.u[0][j], s.u[1][j], s.u[2][j] = u0, u1, u2
		s.uu[0][j], s.uu[1][j], s.uu[2][j] = uu00, uu01, uu02
		s.uu[3][j], s.uu[4][j], s.uu[5][j] = uu11, uu12, uu22
	}
}
