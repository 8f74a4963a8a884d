"""A Django site for `make bench`: the kind of stack a real web application
samples (gunicorn's sync worker, WSGI handler, middleware, URL resolver,
class-based view, form and widget rendering, template inheritance, loops,
filters), ~40-50 Python frames deep, with hundreds of distinct stacks.

Run by scripts/bench.py as `python3 -m gunicorn --chdir scripts/bench-app
app:application`. Django 3.2 (Debian bookworm's python3-django) takes three
functions from the cgi module, which Python 3.13 removed: compat/cgi.py has
them, and the bench puts compat/ on the path for 3.13+ only.
"""
from django.conf import settings

PAGE = """{% extends "base.html" %}
{% block content %}
<form method="post">{{ form.as_p }}</form>
<table>{% for row in rows %}
<tr class="{% cycle 'odd' 'even' %}">
<td>{{ forloop.counter }}</td><td>{{ row.name|title|truncatechars:20 }}</td>
<td>{{ row.price|floatformat:2 }}</td><td>{{ row.when|date:"Y-m-d H:i" }}</td>
<td>{% if row.price > 100 %}dear{% elif row.price > 50 %}fair{% else %}cheap{% endif %}</td>
<td>{% for t in row.tags %}{% include "tag.html" with tag=t %}{% endfor %}</td>
</tr>{% endfor %}</table>
{% endblock %}"""

settings.configure(
    DEBUG=False,
    SECRET_KEY="bench",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["*"],
    USE_TZ=True,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth"],
    DATABASES={},
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    TEMPLATES=[{
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "OPTIONS": {"loaders": [("django.template.loaders.locmem.Loader", {
            "base.html": "<html><head><title>{% block title %}bench{% endblock %}</title>"
                         "</head><body>{% block content %}{% endblock %}</body></html>",
            "tag.html": "<span class=\"tag\">{{ tag|upper }}</span> ",
            "page.html": PAGE,
        })]},
    }],
)

import datetime  # noqa: E402

import django  # noqa: E402
from django import forms  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.generic import TemplateView  # noqa: E402

django.setup()


class OrderForm(forms.Form):
    name = forms.CharField(max_length=50, initial="someone")
    email = forms.EmailField(initial="someone@example.org")
    quantity = forms.IntegerField(min_value=1, initial=3)
    colour = forms.ChoiceField(choices=[(c, c.title()) for c in ("red", "green", "blue")])
    when = forms.DateField(initial=datetime.date(2024, 1, 2))
    notes = forms.CharField(widget=forms.Textarea, required=False)


class Page(TemplateView):
    template_name = "page.html"

    def get_context_data(self, **kw):
        ctx = super().get_context_data(**kw)
        start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
        ctx["form"] = OrderForm()
        ctx["rows"] = [{"name": "item number %d" % i, "price": (i * 37) % 150 + 0.5,
                        "when": start + datetime.timedelta(hours=i),
                        "tags": ["t%d" % (i % 5), "x%d" % (i % 3)]}
                       for i in range(int(kw.get("n", 60)))]
        return ctx


def api(request, n):
    return JsonResponse({"items": [{"id": i, "name": "item %d" % i} for i in range(n)]})


urlpatterns = [path("", Page.as_view()), path("page/<int:n>", Page.as_view()),
               path("api/<int:n>", api)]

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
