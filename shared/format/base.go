package format

// Base is what every format has: the read environment it is built over,
// its repository format name and its URL prefix. Formats embed it and add
// their routes and their error shape.
type Base struct {
	Env          *Env
	name, prefix string
}

// NewBase is the base of the format name served under prefix over env.
func NewBase(env *Env, name, prefix string) Base { return Base{Env: env, name: name, prefix: prefix} }

// Name implements Format: the repository format identifier.
func (b Base) Name() string { return b.name }

// Prefix implements Format: the URL prefix.
func (b Base) Prefix() string { return b.prefix }
