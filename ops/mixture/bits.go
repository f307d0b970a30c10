package mixture

import (
	"bytes"
	"hash/maphash"
	"unsafe"
)

// SameBits reports whether a and b hold bitwise the same values: −0 differs
// from +0, and a NaN equals a NaN of the same bits. It compares at memory
// speed (bytes.Equal; slices.Equal on the bytes goes one byte at a time,
// which once took 2 % of the fused paper step in the ops' memo).
func SameBits[T Float](a, b []T) bool {
	return bytes.Equal(bitsOf(a), bitsOf(b))
}

// bitsOf views v as raw bytes.
func bitsOf[T Float](v []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(z)))
}

// HashBits returns the 64-bit hash under seed of v's bits (maphash.Bytes
// of its memory): equal for SameBits slices, and for others as unlikely
// to collide as maphash makes it.
func HashBits[T Float](seed maphash.Seed, v []T) uint64 {
	return maphash.Bytes(seed, bitsOf(v))
}
