package train

// SetTestHookStep sets the function every step taken in its own goroutine
// runs first, and returns a function that removes it.
func SetTestHookStep(f func()) (restore func()) {
	testHookStep = f
	return func() { testHookStep = nil }
}
