%%%----------------------------------------------------------------------
%%% File    : mod_apush_bridge_stanza.erl
%%% Purpose : The pure part of mod_apush_bridge: what a push to the apush
%%%           component carries, decided on plain XML elements
%%%
%%% The component classifies a push from a stripped copy of the stanza that
%%% caused it (a message, a call, a read, a wake). The copy keeps the
%%% attributes and the children classification reads, and nothing else: a
%%% body, a subject or an encrypted payload leaves only an empty element of
%%% its name, so no text reaches the component, and no message, however
%%% large, can push a publish over the component's stanza limit.
%%%
%%% No ejabberd process, hook or table is touched here, so the unit tests
%%% (test/mod_apush_bridge_stanza_tests.erl) run it with plain Erlang/OTP.
%%% MIT licensed, part of apush-component.
%%%----------------------------------------------------------------------
-module(mod_apush_bridge_stanza).

-export([stripped/2, default_limit/0, names/2, is_important/2, is_read/2, is_activity/1, is_available/1,
         presence_report/3, active_report/1,
         bridged_notification/4, without_body_text/1, mds_notice/2,
         account_element/3, is_oversized_registration/2, enable_refusal/4,
         refused_registration/1, fingerprint/1, asked_accounts/2, accounts_answer/1]).

-include("xmpp.hrl").

-define(NS_BRIDGE, <<"urn:xmpp:apush:bridge:0">>).
-define(NS_MDS, <<"urn:xmpp:mds:displayed:0">>).
-define(NS_MARKERS, <<"urn:xmpp:chat-markers:0">>).
%% The cap on a forwarded copy: past it the push names the account alone.
-define(DEFAULT_LIMIT, 16384).
%% The largest token and publish-options form a client may enable push with:
%% a real one is a few hundred bytes (the component refuses tokens over 2048).
-define(MAX_TOKEN_BYTES, 2048).
-define(MAX_OPTIONS_BYTES, 4096).
%% What the component sees instead of a message's text in the summary form.
-define(DUMMY_BODY, <<"New message">>).

-type element() :: fxml:xmlel().

-spec default_limit() -> pos_integer().
default_limit() -> ?DEFAULT_LIMIT.

%%%===================================================================
%%% The stripped copy
%%%===================================================================

%% The stripped copy of a message (in jabber:client, to sit inside
%% <forwarded/>), or none when the stanza is not a message or the copy would
%% be longer than Limit bytes serialised.
-spec stripped(element(), pos_integer()) -> element() | none.
stripped(Stanza, Limit) ->
    within(strip(Stanza), Limit).

%% The stripped copy whatever its size; none for anything but a message.
-spec strip(element()) -> element() | none.
strip(#xmlel{name = <<"message">>} = Message) ->
    case copy(Message, top, ?NS_CLIENT) of
        #xmlel{attrs = Attrs} = Copy -> Copy#xmlel{attrs = lists:keystore(<<"xmlns">>, 1, Attrs, {<<"xmlns">>, ?NS_CLIENT})};
        none -> none
    end;
strip(_Stanza) ->
    none.

within(none, _Limit) -> none;
within(Copy, Limit) ->
    case byte_size(fxml:element_to_binary(Copy)) > Limit of
        true -> none;
        false -> Copy
    end.

%% What a rule keeps of an element found in Context under its namespace and
%% name: {Attributes, the context of its children (none: an empty marker)},
%% text (an empty marker when it has text), mention (its type and uri when it
%% is a mention), or drop. A body or subject of nothing but white space is none.
-spec rule(atom(), binary(), binary()) -> {[binary()], atom()} | text | mention | drop.
rule(top, ?NS_CLIENT, <<"message">>) -> {[<<"from">>, <<"to">>, <<"type">>, <<"id">>], message};
rule(message, ?NS_CLIENT, Name) when Name == <<"body">>; Name == <<"subject">> -> text;
rule(message, <<"urn:xmpp:sid:0">>, <<"origin-id">>) -> {[<<"id">>], none};
rule(message, <<"urn:xmpp:sid:0">>, <<"stanza-id">>) -> {[<<"id">>, <<"by">>], none};
rule(message, <<"urn:xmpp:carbons:2">>, Name) when Name == <<"received">>; Name == <<"sent">> ->
    {[], carbon};
rule(carbon, <<"urn:xmpp:forward:0">>, <<"forwarded">>) -> {[], forwarded};
rule(forwarded, ?NS_CLIENT, <<"message">>) -> rule(top, ?NS_CLIENT, <<"message">>);
rule(message, ?NS_MARKERS, <<"markable">>) -> {[], none};
rule(message, ?NS_MARKERS, Name)
  when Name == <<"received">>; Name == <<"displayed">>; Name == <<"acknowledged">> ->
    {[<<"id">>], none};
rule(message, <<"urn:xmpp:jingle-message:0">>, <<"propose">>) -> {[<<"id">>], propose};
rule(message, <<"urn:xmpp:jingle-message:0">>, Name)
  when Name == <<"retract">>; Name == <<"accept">>; Name == <<"proceed">>;
       Name == <<"reject">>; Name == <<"finish">> ->
    {[<<"id">>], none};
rule(propose, <<"urn:xmpp:jingle:apps:rtp:1">>, <<"description">>) -> {[<<"media">>], none};
%% XEP-0372: a mention says who is mentioned; any other reference (a file's or
%% a link's URL) is content.
rule(message, <<"urn:xmpp:reference:0">>, <<"reference">>) -> mention;
%% XEP-0490: the chat is the item's id; what was displayed is not needed.
rule(message, ?NS_PUBSUB_EVENT, <<"event">>) -> {[], pubsub_event};
rule(pubsub_event, ?NS_PUBSUB_EVENT, <<"items">>) -> {[<<"node">>], pubsub_items};
rule(pubsub_items, ?NS_PUBSUB_EVENT, <<"item">>) -> {[<<"id">>], none};
%% Encrypted payloads: only that there is one (OMEMO 0.3 and 0.8+, OpenPGP
%% for XMPP, legacy PGP).
rule(message, <<"eu.siacs.conversations.axolotl">>, <<"encrypted">>) -> {[], none};
rule(message, <<"urn:xmpp:omemo:2">>, <<"encrypted">>) -> {[], none};
rule(message, <<"urn:xmpp:openpgp:0">>, <<"openpgp">>) -> {[], none};
rule(message, <<"jabber:x:encrypted">>, <<"x">>) -> {[], none};
rule(_Context, _Namespace, _Name) -> drop.

%% Copies what the rules keep of Element; none for an element they do not
%% name. A child with no namespace of its own is in its parent's
%% (Inherited), as in the stream it came from.
-spec copy(element(), atom(), binary()) -> element() | none.
copy(#xmlel{name = Name, attrs = Attrs} = Element, Context, Inherited) ->
    Namespace = proplists:get_value(<<"xmlns">>, Attrs, Inherited),
    case rule(Context, Namespace, Name) of
        drop ->
            none;
        text ->
            case has_text(Element) of
                true -> kept(Element, [], none, Namespace);
                false -> none
            end;
        mention ->
            case fxml:get_attr_s(<<"type">>, Attrs) of
                <<"mention">> -> kept(Element, [<<"type">>, <<"uri">>], none, Namespace);
                _ -> none
            end;
        {Kept, ChildContext} ->
            kept(Element, Kept, ChildContext, Namespace)
    end.

%% Element with its own namespace, the Kept attributes and what the rules of
%% ChildContext keep of its children (none: no children).
kept(#xmlel{name = Name, attrs = Attrs, children = Children}, Kept, ChildContext, Namespace) ->
    KeptAttrs = [{<<"xmlns">>, NS} || {<<"xmlns">>, NS} <- Attrs]
                ++ [{K, V} || {K, V} <- Attrs, lists:member(K, Kept)],
    KeptChildren = case ChildContext of
                       none -> [];
                       _ -> [C || #xmlel{} = Child <- Children,
                                  (C = copy(Child, ChildContext, Namespace)) /= none]
                   end,
    #xmlel{name = Name, attrs = KeptAttrs, children = KeptChildren}.

-spec has_text(element()) -> boolean().
has_text(Element) ->
    string:trim(fxml:get_tag_cdata(Element)) /= <<>>.

%%%===================================================================
%%% What the original stanza says (read, never copied)
%%%===================================================================

%% Whether Text names Username as a word of its own ("hi alice!", not
%% "malice"): a mention by name, which the component can no longer find once
%% the body is stripped. Case is folded for ASCII (the username is nodeprepped
%% already); any byte of a multi-byte UTF-8 character counts as a letter, so a
%% name glued to a non-ASCII letter is no mention.
-spec names(binary(), binary() | undefined) -> boolean().
names(_Username, undefined) -> false;
names(<<>>, _Text) -> false;
names(Username, Text) ->
    Haystack = string:lowercase(Text),
    Needle = string:lowercase(Username),
    names_at(Haystack, Needle, binary:matches(Haystack, Needle)).

names_at(_Haystack, _Needle, []) ->
    false;
names_at(Haystack, Needle, [{Start, Length} | Rest]) ->
    Before = Start == 0 orelse not is_word_byte(binary:at(Haystack, Start - 1)),
    End = Start + Length,
    After = End == byte_size(Haystack) orelse not is_word_byte(binary:at(Haystack, End)),
    (Before andalso After) orelse names_at(Haystack, Needle, Rest).

is_word_byte(B) when B >= $a, B =< $z -> true;
is_word_byte(B) when B >= $A, B =< $Z -> true;
is_word_byte(B) when B >= $0, B =< $9 -> true;
is_word_byte(B) -> B >= 128.

%% A message a person is notified of (what mod_cloud_notify calls important,
%% so both bridges say the same): a call, an encrypted payload or a body that
%% is not only white space, in a message to the account or in the carbon copy
%% of one; never the account's own outgoing message, a headline or a room's
%% subject change.
-spec is_important(element(), binary()) -> boolean().
is_important(Stanza, AccountBare) ->
    important(strip(Stanza), AccountBare).

%% The same, judged from the stripped copy (what the rules keep is all it reads).
important(none, _AccountBare) ->
    false;
important(Copy, AccountBare) ->
    case carbon(Copy) of
        {<<"sent">>, _} -> false;
        {<<"received">>, Inner} -> is_important_copy(Inner, AccountBare);
        none -> is_important_copy(Copy, AccountBare)
    end.

is_important_copy(Copy, AccountBare) ->
    Type = fxml:get_tag_attr_s(<<"type">>, Copy),
    Outgoing = bare(fxml:get_tag_attr_s(<<"from">>, Copy)) == AccountBare,
    Subject = Type == <<"groupchat">> andalso has_child(Copy, ?NS_CLIENT, <<"subject">>),
    Type /= <<"headline">> andalso not Outgoing andalso not Subject andalso
        (has_content(Copy) orelse has_child(Copy, <<"urn:xmpp:jingle-message:0">>, <<"propose">>)).

%% The account reading or answering a chat, seen in what it sends: a message
%% with a body or a displayed marker, to someone else, that is not an error
%% or a headline.
-spec is_read(element(), binary()) -> boolean().
is_read(#xmlel{name = <<"message">>} = Message, AccountBare) ->
    Type = fxml:get_tag_attr_s(<<"type">>, Message),
    To = fxml:get_tag_attr_s(<<"to">>, Message),
    Type /= <<"error">> andalso Type /= <<"headline">> andalso To /= <<>>
        andalso bare(To) /= AccountBare
        andalso case strip(Message) of
                    none -> false;
                    Copy -> has_body(Copy) orelse has_child(Copy, ?NS_MARKERS, <<"displayed">>)
                end;
is_read(_Stanza, _AccountBare) ->
    false.

has_content(Copy) ->
    has_body(Copy) orelse
        lists:any(fun({NS, Name}) -> has_child(Copy, NS, Name) end,
                  [{<<"eu.siacs.conversations.axolotl">>, <<"encrypted">>},
                   {<<"urn:xmpp:omemo:2">>, <<"encrypted">>},
                   {<<"urn:xmpp:openpgp:0">>, <<"openpgp">>},
                   {<<"jabber:x:encrypted">>, <<"x">>}]).

%% The copy keeps a body only when it has text.
has_body(Copy) -> has_child(Copy, ?NS_CLIENT, <<"body">>).

%%%===================================================================
%%% The account's other sessions (grace)
%%%===================================================================

%% Whether a message the account sent shows it active on that device: a
%% body, a chat marker, or a chat state `active` or `composing`.
-spec is_activity(element()) -> boolean().
is_activity(#xmlel{name = <<"message">>} = Message) ->
    fxml:get_tag_attr_s(<<"type">>, Message) /= <<"error">>
        andalso case strip(Message) of
                    none -> false;
                    Copy -> has_body(Copy) orelse
                                lists:any(fun(Marker) -> has_child(Message, ?NS_MARKERS, Marker) end,
                                          [<<"received">>, <<"displayed">>, <<"acknowledged">>]) orelse
                                lists:any(fun(State) -> has_child(Message, ?NS_CHATSTATES, State) end,
                                          [<<"active">>, <<"composing">>])
                end;
is_activity(_Stanza) ->
    false.

%% What the component hears of a presence: available is `show` absent or
%% `chat`; away, xa, dnd and unavailable are not. Nothing else (no status
%% text, no priority) is read.
-spec is_available(element()) -> boolean().
is_available(#xmlel{name = <<"presence">>} = Presence) ->
    case {fxml:get_tag_attr_s(<<"type">>, Presence), fxml:get_subtag(Presence, <<"show">>)} of
        {<<>>, false} -> true;
        {<<>>, Show} -> fxml:get_tag_cdata(Show) == <<"chat">>;
        _ -> false
    end;
is_available(_Stanza) ->
    false.

-spec presence_report(binary(), binary(), boolean()) -> element().
presence_report(Account, Resource, Available) ->
    #xmlel{name = <<"presence">>,
           attrs = [{<<"xmlns">>, ?NS_BRIDGE}, {<<"account">>, Account}, {<<"resource">>, Resource},
                    {<<"available">>, atom_to_binary(Available, utf8)}]}.

-spec active_report(binary()) -> element().
active_report(Account) ->
    #xmlel{name = <<"active">>, attrs = [{<<"xmlns">>, ?NS_BRIDGE}, {<<"account">>, Account}]}.

has_child(#xmlel{children = Children} = Parent, NS, Name) ->
    ParentNS = fxml:get_tag_attr_s(<<"xmlns">>, Parent),
    lists:any(fun(#xmlel{name = N} = Child) ->
                      N == Name andalso namespace(Child, ParentNS) == NS;
                 (_) -> false
              end, Children).

%% The carbon copy (XEP-0280) a stripped copy wraps, if any: {received |
%% sent, the message}.
carbon(#xmlel{children = Children}) ->
    case [{Wrapper, Inner} || #xmlel{name = Wrapper, children = Forwards} <- Children,
                              Wrapper == <<"received">> orelse Wrapper == <<"sent">>,
                              #xmlel{name = <<"forwarded">>, children = Messages} <- Forwards,
                              #xmlel{name = <<"message">>} = Inner <- Messages] of
        [First | _] -> First;
        [] -> none
    end.

namespace(#xmlel{attrs = Attrs}, Inherited) ->
    proplists:get_value(<<"xmlns">>, Attrs, Inherited).

bare(JID) ->
    case binary:split(JID, <<"/">>) of
        [Bare | _] -> string:lowercase(Bare)
    end.

%%%===================================================================
%%% The bridged notification
%%%===================================================================

%% <account xmlns='urn:xmpp:apush:bridge:0' jid=… important=… [mention='true']/>
-spec account_element(binary(), boolean(), boolean()) -> element().
account_element(AccountBare, Important, Mention) ->
    #xmlel{name = <<"account">>,
           attrs = [{<<"xmlns">>, ?NS_BRIDGE}, {<<"jid">>, AccountBare},
                    {<<"important">>, atom_to_binary(Important, utf8)}]
                   ++ [{<<"mention">>, <<"true">>} || Mention]}.

%% mod_push's <notification/> (as XML) with the account and the stripped copy
%% of Original added, and no message text in its summary form. Original is
%% none for a push that has no stanza (a wake): then only the account is added.
-spec bridged_notification(element(), binary(), element() | none, pos_integer()) -> element().
bridged_notification(#xmlel{children = Children} = Notification, AccountBare, Original, Limit) ->
    Username = hd(binary:split(AccountBare, <<"@">>)),
    {Important, Mention, Forwarded} =
        case Original of
            none ->
                {false, false, []};
            _ ->
                Body = fxml:get_path_s(Original, [{elem, <<"body">>}, cdata]),
                Stripped = strip(Original),
                Copy = within(Stripped, Limit),
                {important(Stripped, AccountBare), Body /= <<>> andalso names(Username, Body),
                 [#xmlel{name = <<"forwarded">>, attrs = [{<<"xmlns">>, ?NS_FORWARD}], children = [Copy]}
                  || Copy /= none]}
        end,
    Notification#xmlel{children = [without_body_text(C) || C <- Children]
                                  ++ [account_element(AccountBare, Important, Mention) | Forwarded]}.

%% With include_body: true, mod_push puts the message's text into the summary
%% form. The component only needs to know there is one: it gets a dummy text.
-spec without_body_text(fxml:xmlel() | fxml:cdata()) -> fxml:xmlel() | fxml:cdata().
without_body_text(#xmlel{name = <<"x">>, children = Fields} = Form) ->
    Form#xmlel{children = [case Field of
                               #xmlel{name = <<"field">>} ->
                                   case fxml:get_tag_attr_s(<<"var">>, Field) of
                                       <<"last-message-body">> ->
                                           Field#xmlel{children = [#xmlel{name = <<"value">>,
                                                                          children = [{xmlcdata, ?DUMMY_BODY}]}]};
                                       _ -> Field
                                   end;
                               _ -> Field
                           end || Field <- Fields]};
without_body_text(Other) ->
    Other.

%% XEP-0490: the PEP event message the account's own devices receive when it
%% publishes a displayed marker for a chat (the item id is the chat).
-spec mds_notice(binary(), binary()) -> element().
mds_notice(AccountBare, ItemId) ->
    #xmlel{name = <<"message">>,
           attrs = [{<<"xmlns">>, ?NS_CLIENT}, {<<"from">>, AccountBare}, {<<"to">>, AccountBare},
                    {<<"type">>, <<"headline">>}, {<<"id">>, ItemId}],
           children = [#xmlel{name = <<"event">>, attrs = [{<<"xmlns">>, ?NS_PUBSUB_EVENT}],
                              children = [#xmlel{name = <<"items">>, attrs = [{<<"node">>, ?NS_MDS}],
                                                 children = [#xmlel{name = <<"item">>,
                                                                    attrs = [{<<"id">>, ItemId}]}]}]}]}.

%% What a client writes into <enable/> travels with every push the server
%% makes for it, whatever service it names: a token or a form larger than any
%% real one would make each publish as large (the component refuses it
%% anyway). Measured as they are sent: escaped.
-spec is_oversized_registration(binary(), element() | undefined) -> boolean().
is_oversized_registration(Node, Form) ->
    byte_size(fxml:crypt(Node)) > ?MAX_TOKEN_BYTES orelse
        (Form /= undefined andalso byte_size(fxml:element_to_binary(Form)) > ?MAX_OPTIONS_BYTES).

%% Why an <enable/> towards LService (jid:tolower/1) must not be stored, the
%% text of a not-acceptable, or none. Every JID of the component's domain
%% reaches the component: one the bridge did not take for it would be stored
%% and pushed to without its caps and its enrichment. The component needs the
%% form: it carries the device's key.
-spec enable_refusal({binary(), binary(), binary()}, binary(), binary(), element() | undefined) -> none | binary().
enable_refusal({User, Component, Resource}, Component, _Node, _Form) when User /= <<>>; Resource /= <<>> ->
    <<"Push notifications go to the component's own JID, ", Component/binary>>;
enable_refusal(LService, Component, Node, Form) ->
    case is_oversized_registration(Node, Form) of
        true -> <<"The push token or its options are too large">>;
        false when LService == {<<>>, Component, <<>>}, Form == undefined ->
            <<"Push notifications to this service need a publish-options form">>;
        false -> none
    end.

%%%===================================================================
%%% What the component says
%%%===================================================================

%% The account and token of the <registered/> an error message from the
%% component echoes: a registration it cannot use. none for anything else,
%% and for a wait error (its store is away: nothing is known of the
%% registration).
-spec refused_registration(element()) -> {binary(), binary()} | none.
refused_registration(#xmlel{name = <<"message">>} = Message) ->
    Registered = fxml:get_subtag_with_xmlns(Message, <<"registered">>, ?NS_BRIDGE),
    Error = fxml:get_subtag(Message, <<"error">>),
    Enable = Registered /= false andalso fxml:get_subtag_with_xmlns(Registered, <<"enable">>, ?NS_PUSH_0),
    case fxml:get_tag_attr_s(<<"type">>, Message) == <<"error">> andalso Error /= false andalso Enable /= false
         andalso {fxml:get_tag_attr_s(<<"type">>, Error), fxml:get_tag_attr_s(<<"account">>, Registered),
                  fxml:get_tag_attr_s(<<"node">>, Enable)} of
        {Type, Account, Token} when Type /= <<"wait">>, Account /= <<>>, Token /= <<>> -> {Account, Token};
        _ -> none
    end.

%% A token as a log line may name it: the component's own fingerprint ("#"
%% and the first 8 hex digits of its SHA-256).
-spec fingerprint(binary()) -> binary().
fingerprint(Token) ->
    <<Prefix:4/binary, _/binary>> = crypto:hash(sha256, Token),
    <<"#", (string:lowercase(binary:encode_hex(Prefix)))/binary>>.

%% The JIDs the component's <accounts/> query asks about, in order, or
%% too_many past Max (the rest is not read).
-spec asked_accounts(element(), pos_integer()) -> {ok, [binary()]} | too_many.
asked_accounts(#xmlel{children = Children}, Max) ->
    asked_accounts(Children, Max, []).

asked_accounts(_Children, Max, Asked) when length(Asked) > Max ->
    too_many;
asked_accounts([#xmlel{name = <<"account">>} = Account | Rest], Max, Asked) ->
    asked_accounts(Rest, Max, [fxml:get_tag_attr_s(<<"jid">>, Account) | Asked]);
asked_accounts([_ | Rest], Max, Asked) ->
    asked_accounts(Rest, Max, Asked);
asked_accounts([], _Max, Asked) ->
    {ok, lists:reverse(Asked)}.

%% <accounts xmlns='urn:xmpp:apush:bridge:0'> with each asked JID, as asked,
%% and whether it exists.
-spec accounts_answer([{binary(), boolean()}]) -> element().
accounts_answer(Accounts) ->
    #xmlel{name = <<"accounts">>, attrs = [{<<"xmlns">>, ?NS_BRIDGE}],
           children = [#xmlel{name = <<"account">>,
                              attrs = [{<<"jid">>, JID}, {<<"exists">>, atom_to_binary(Exists, utf8)}]}
                       || {JID, Exists} <- Accounts]}.
