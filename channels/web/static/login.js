// login.js copies the one-time token from the link (?t=...) into the sign-in form. The token is only used when
// the button is pressed, so a link preview that fetches the page does not use it up.
'use strict';

const token = new URLSearchParams(location.search).get('t');
if (token) {
  document.getElementById('t').value = token;
} else {
  document.getElementById('sign-in').disabled = true;
  document.getElementById('no-token').hidden = false;
}
