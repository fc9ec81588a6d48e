package panprivate

// parts exposes a user id for callers that drive estimators taking ids and
// names separately (the continual density estimator): the integer id, or the
// string name when named is true.
func (u User) parts() (id uint64, name string, named bool) { return u.id, u.name, u.named }
