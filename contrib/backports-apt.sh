# Sourced by contrib/prosody/backports.sh and contrib/ejabberd/backports.sh (with `prefix` set): a
# private apt configuration under $prefix/apt, with bookworm to resolve against and bookworm-backports
# to take the newer packages from, so that the system's apt is not changed. Sets `apt_options` (pass
# them to apt-get) and `with_apt_lock` (the two scripts may update the same lists at once), and
# updates the private lists.
apt_dir=$prefix/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$apt_dir/sources.list" <<SOURCES
deb [signed-by=$keyring] http://deb.debian.org/debian bookworm main
deb [signed-by=$keyring] http://deb.debian.org/debian bookworm-updates main
deb [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=$keyring] http://deb.debian.org/debian bookworm-backports main
SOURCES
apt_options=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
)
with_apt_lock() { flock "$apt_dir/.lock" "$@"; }
with_apt_lock apt-get "${apt_options[@]}" -qq update
