// Placeholder removed when the target's first source lands.
