import factory
from factory.django import DjangoModelFactory

from apps.accounts.models import User
from apps.cases.models import Case, Membership

PASSWORD = "Correct-horse-battery-42"


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"person{n}@firm.test")
    full_name = factory.Sequence(lambda n: f"Person {n}")
    role = User.Role.STAFF
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj: User, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            obj.save()


class CaseFactory(DjangoModelFactory[Case]):
    class Meta:
        model = Case

    title = factory.Sequence(lambda n: f"Acme {n} v. Widget")
    number = factory.Sequence(lambda n: f"CV-2026-{n:04d}")
    court = "Superior Court"
    client = "Acme Corp."
    created_by = factory.SubFactory(UserFactory, role=User.Role.LAWYER)


class MembershipFactory(DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    case = factory.SubFactory(CaseFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.STAFF
