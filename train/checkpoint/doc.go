// Package checkpoint stores the state of a training run so that a resumed run
// continues exactly where the interrupted one stopped: parameters, optimiser
// and schedule state, running statistics, the shuffling RNG, the position
// inside the epoch and the metrics so far. A file is a magic string, a format
// version, the payload length, the gob-encoded State and its SHA-256; it is
// written atomically, and any damage is an error that names the file.
package checkpoint
