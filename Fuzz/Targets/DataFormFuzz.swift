import Foundation
import XMPP

@testable import APush
@testable import XMLStream

/// The input is one element, read as a XEP-0004 form: it must survive being written and read again;
/// it is read as publish-options (a registration) and as a submitted policy form, and an accepted
/// policy must come back unchanged through its own form and through its JSON coding.
func fuzzDataForm(_ input: [UInt8]) {
    guard let element = parsedElement(input), let form = try? DataForm(element: element) else { return }
    let written = form.element.serialized()
    let reread = try? DataForm(element: Element.parse(written))
    require(reread == form, "the form changed when written and read again")

    _ = try? RegistrationOptions(form: form)

    let bounds = (minimum: 0, maximum: 300)
    guard let policy = try? PushPolicy().applying(form, minimumWindow: bounds.minimum, maximumWindow: bounds.maximum)
    else { return }
    let ownForm = policy.form(title: "Push", minimumWindow: bounds.minimum, maximumWindow: bounds.maximum)
    var submitted = ownForm
    submitted.type = .submit
    let again = try? PushPolicy().applying(submitted, minimumWindow: bounds.minimum, maximumWindow: bounds.maximum)
    require(again == policy, "the policy changed through its own form")
    let decoded = (try? JSONEncoder().encode(policy)).flatMap { try? JSONDecoder().decode(PushPolicy.self, from: $0) }
    require(decoded == policy, "the policy changed through its JSON coding")
    _ = policy.override(over: PushPolicy())
}
