import { describe, expect, it } from 'vitest';
import { escapeLike, foldForSearch, sanitizeDescription } from '../../src/shared/text.js';

describe('foldForSearch', () => {
  it.each([
    ['Thẻ Garena 100k', 'the garena 100k'],
    ['THE GARENA', 'the garena'],
    ['Điện thoại', 'dien thoai'],
    ['đ Đ', 'd d'],
    ['ĐIỆN THOẠI', 'dien thoai'],
    ['Ắ Ằ Ẳ Ẵ Ặ ư ơ Ư Ơ', 'a a a a a u o u o'],
    ['Café Ñandú', 'cafe nandu'],
    ['  a \t\n b  ', 'a b'],
    ['100% a_b', '100% a_b'],
    ['', ''],
  ])('%j -> %j', (input, folded) => {
    expect(foldForSearch(input)).toBe(folded);
  });

  it('folds composed and decomposed Unicode the same way', () => {
    const composed = 'Thẻ Điện thoại'.normalize('NFC');
    const decomposed = composed.normalize('NFD');
    expect(decomposed).not.toBe(composed);
    expect(foldForSearch(decomposed)).toBe(foldForSearch(composed));
    expect(foldForSearch(decomposed)).toBe('the dien thoai');
  });
});

describe('escapeLike', () => {
  it.each([
    ['plain', 'plain'],
    ['%', '\\%'],
    ['_', '\\_'],
    ['\\', '\\\\'],
    ['a%b_c\\d', 'a\\%b\\_c\\\\d'],
    ['100%%', '100\\%\\%'],
  ])('%j -> %j', (input, escaped) => {
    expect(escapeLike(input)).toBe(escaped);
  });
});

describe('sanitizeDescription', () => {
  it.each([
    ['<img src=x onerror=alert(1)>', '<img src="x" />'],
    ['<img src="https://cdn.example/a.png" alt="A" onerror="x" onload="y">', '<img src="https://cdn.example/a.png" alt="A" />'],
    ['<a href="javascript:alert(1)">x</a>', '<a>x</a>'],
    ['<a href="JaVaScRiPt:alert(1)">x</a>', '<a>x</a>'],
    ['<a href="java&#x09;script:alert(1)">x</a>', '<a>x</a>'],
    ['<a href=" &#106;avascript:alert(1)">x</a>', '<a>x</a>'],
    ['<a href="javascript&colon;alert(1)">x</a>', '<a>x</a>'],
    ['<a href="vbscript:msgbox(1)">x</a>', '<a>x</a>'],
    ['<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>', '<a>x</a>'],
    ['<img src="data:image/svg+xml;base64,PHN2Zz4=">', '<img />'],
    ['<a href="//evil.example/">x</a>', '<a>x</a>'],
    ['<script>alert(1)</script>after', 'after'],
    ['<SCRIPT src="https://evil.example/x.js"></SCRIPT>after', 'after'],
    ['<iframe src="https://evil.example">inner text</iframe>ok', 'ok'],
    ['<object data="x"></object><embed src="x">ok', 'ok'],
    ['<style>body{display:none}</style>ok', 'ok'],
    ['<p style="color:red;background:url(javascript:alert(1))">p</p>', '<p>p</p>'],
    ['<div onmouseover="alert(1)" class="c" id="i">d</div>', '<div>d</div>'],
    ['<svg onload=alert(1)><circle/></svg>ok', 'ok'],
    ['<form action="javascript:alert(1)"><input type=submit></form>ok', 'ok'],
    ['<base href="https://evil.example/"><meta http-equiv="refresh" content="0;url=https://evil.example">ok', 'ok'],
    ['<img src="https://a.example/b.png" srcset="javascript:alert(1)">', '<img src="https://a.example/b.png" />'],
    ['<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>ok', 'ok'],
  ])('%j -> %j', (input, clean) => {
    const out = sanitizeDescription(input);
    expect(out).toBe(clean);
    expect(out).not.toMatch(/<script|<iframe|<style|<svg|<object|<embed|<form|\son\w+=|javascript:|data:|style=/i);
  });

  it.each([
    ['<b>bold</b> <i>it</i> <strong>s</strong> <em>e</em> <u>u</u>', '<b>bold</b> <i>it</i> <strong>s</strong> <em>e</em> <u>u</u>'],
    [
      '<a href="https://example.com/help?a=1&b=2" title="Help" target="_blank">help</a>',
      '<a href="https://example.com/help?a=1&amp;b=2" title="Help" target="_blank" rel="noopener noreferrer">help</a>',
    ],
    ['<a href="mailto:support@example.com">mail</a>', '<a href="mailto:support@example.com">mail</a>'],
    ['<ul><li>one</li><li>two</li></ul>', '<ul><li>one</li><li>two</li></ul>'],
    ['Line 1\nLine 2<br>Line 3', 'Line 1\nLine 2<br />Line 3'],
    ['Windows\r\nline\rends', 'Windows\nline\nends'],
    ['Giá < 100k & free', 'Giá &lt; 100k &amp; free'],
    ['Thẻ Garena — nạp nhanh', 'Thẻ Garena — nạp nhanh'],
    ['', ''],
  ])('keeps safe markup: %j -> %j', (input, clean) => {
    expect(sanitizeDescription(input)).toBe(clean);
  });

  it('keeps the text around removed markup, line breaks included', () => {
    const input = 'Step 1: buy\n<script>steal()</script>Step 2: <b onclick="x()">redeem</b>\n<img src=x onerror=alert(1)>Done';
    expect(sanitizeDescription(input)).toBe('Step 1: buy\nStep 2: <b>redeem</b>\n<img src="x" />Done');
  });

  it('is stable: sanitising a sanitised text changes nothing', () => {
    const once = sanitizeDescription('<p style="x">a<br>b</p><a href="https://e.example/?q=1&r=2">l</a> 1 < 2 & 3 > 2<script>x</script>');
    expect(sanitizeDescription(once)).toBe(once);
  });
});
