-- Prosody 0.12 or 13.0 with the apush component: the lines to add to /etc/prosody/prosody.cfg.lua.
--
-- Replace example.org with your domain and apush.example.org with the component's JID (any name
-- under your domain that your DNS does not need to know: the component is reached through Prosody).
-- Needs mod_cloud_notify (0.12: Debian's prosody-modules; 13.0 has its own). mod_apush_bridge is optional but gives the
-- component full fidelity (the account, calls, reads, group chats, message ids): see
-- contrib/prosody/README.md. Without it, remove "apush_bridge" and its two options below: the
-- component then runs in stock mode.

---------- Global section ----------

-- Where mod_apush_bridge.lua and apush_bridge_strip.lib.lua were copied (keep Prosody's own module directory out of this list).
plugin_paths = { "/usr/local/lib/prosody/modules" }

-- The component connects to Prosody over XEP-0114. It runs on the same machine: listen on loopback
-- only.
component_ports = { 5347 }
component_interfaces = { "127.0.0.1", "::1" }

---------- mod_cloud_notify (XEP-0357) ----------

-- Name the sender in each push's summary (a full JID). The component needs it to group messages by
-- chat in stock mode; with the bridge it reads the forwarded stanza instead, so it does no harm.
push_notification_with_sender = true
-- Never send the message text to the push service: the component never passes it on anyway, and
-- the bridge already forwards the stanza to it.
push_notification_with_body = false
-- Defaults, shown for reference: at most 5 devices per account; a registration is dropped after 16
-- errors other than 'wait' (the component answers 'cancel' only for a dead token); a hibernated
-- session with push is kept up to 72 h.
-- push_max_devices = 5
-- push_max_errors = 16
-- push_max_hibernation_timeout = 72 * 3600

---------- Your domain ----------

VirtualHost "example.org"
  -- Add these to the host's modules (the global modules_enabled still applies). Stream management
  -- ("smacks", loaded globally by default in 0.12 and 13.0) and MAM let cloud_notify push for hibernated and
  -- partly online accounts; "pep" is needed for XEP-0490 read markers.
  modules_enabled = { "cloud_notify"; "apush_bridge" }

  -- The component's JID: registrations made towards it are reported to it, and its pushes carry the
  -- account and the original stanza.
  apush_bridge_component = "apush.example.org"

  -- The push services clients may enable on this host. Empty (or absent): any service. The
  -- component above is always allowed. List the services you still serve directly, if any, e.g.
  -- { "push.example.org" }; an <enable/> towards any other is refused with not-allowed.
  apush_bridge_allowed_services = { }

---------- The component ----------

Component "apush.example.org"
  -- The same secret goes into the component's own configuration. Use a long random string.
  component_secret = "CHANGE ME: a long random secret"
